/* The seed of the ELF reader's property test (cli/src/inputs_mutated.rs) and
 * fuzz target (`elf`): built at test time, never committed as a binary. Built
 * with `cc -O1 seed.c -o seed -Wl,--no-as-needed -lm -Wl,-rpath,/opt/kokkos/lib`
 * it needs libm.so.6, has a run path, defines a Kokkos marker symbol and holds
 * the string Kokkos >= 3.5 reads, so every part of the reader has something to
 * find. */
#include <math.h>
#include <stdio.h>

void kokkos_marker(void) __asm__("_ZN6Kokkos10initializeEv");
void kokkos_marker(void) {}

const char *loader_variable = "KOKKOS_TOOLS_LIBS";

int main(int argc, char **argv) {
    (void)argv;
    kokkos_marker();
    printf("%s %f\n", loader_variable, cos((double)argc));
    return 0;
}
