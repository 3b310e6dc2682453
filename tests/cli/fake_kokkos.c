/* fake_kokkos: what kprof run's detection sees in a program with a static Kokkos
 * >= 3.5 (a Kokkos symbol defined, the variable names Kokkos reads in its data),
 * without Kokkos. Prints the tool variables it was started with. */
#include <stdio.h>
#include <stdlib.h>

/* Kokkos::initialize(), as a Kokkos build defines it (C allows the mangled name). */
void _ZN6Kokkos10initializeEv(void) {}

static const char *const read_by_kokkos[] = {"KOKKOS_TOOLS_LIBS", "KOKKOS_PROFILE_LIBRARY"};

int main(void) {
    _ZN6Kokkos10initializeEv();
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(read_by_kokkos[i]);
        printf("%s=%s\n", read_by_kokkos[i], v ? v : "(unset)");
    }
    return 0;
}
