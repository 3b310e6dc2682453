/*
 * lifecycle.c - how a run starts and ends, for tests/tests/lifecycle_trust.rs
 * (annotation API, linked with libkprof_core.so).
 *
 *   lifecycle late        sleeps 150 ms before its first annotation, then one
 *                         region "work" of 20 ms; prints "main <ns>\n": its own
 *                         time from main's first line to its return (CLOCK_MONOTONIC)
 *   lifecycle kill <ms>   1000 regions "k", sleeps <ms>, then raise(SIGKILL)
 *   lifecycle exit <ms>   the same, then _exit(0) (no exit handler runs)
 *   lifecycle end <ms>    the same, then returns from main
 */
#define _GNU_SOURCE
#include <kprof.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

int main(int argc, char **argv) {
    unsigned long long t0 = now_ns();
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "late")) {
        nap_ms(150);
        kprof_region_begin("work");
        nap_ms(20);
        kprof_region_end("work");
        printf("main %llu\n", now_ns() - t0);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: lifecycle late | kill|exit|end <ms>\n");
        return 2;
    }
    for (int i = 0; i < 1000; i++) {
        kprof_region_begin("k");
        kprof_region_end("k");
    }
    nap_ms(atol(argv[2]));
    if (!strcmp(mode, "kill"))
        raise(SIGKILL);
    if (!strcmp(mode, "exit"))
        _exit(0);
    return 0;
}
