/*
 * mpi_driver.c - the program of tests/benches/mpi_overhead.rs, on 2 ranks:
 *
 *   mpi_driver p2p|allreduce <iterations> <reps>
 *
 * p2p: each iteration is MPI_Irecv + MPI_Isend of 8 bytes with the other rank and
 * MPI_Waitall of both (3 MPI calls); allreduce: one MPI_Allreduce of one double
 * (1 call). A barrier starts each repetition; one warm-up repetition is not
 * timed. Rank 0 prints the median over repetitions of the time per MPI call
 * ("ns_per_call <x>"), the same in the thread's CPU time ("cpu_ns_per_call <x>":
 * on a shared machine it leaves out the time the rank was not running), and the
 * calls it made ("calls <n>"); both ranks check the data they received.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4 || size > 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 mpi_driver p2p|allreduce <iterations> <reps>\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int p2p = strcmp(argv[1], "p2p") == 0;
    long iters = atol(argv[2]);
    int reps = atoi(argv[3]);
    int other = size == 1 ? 0 : 1 - rank;
    double *times = calloc((size_t)reps, sizeof *times);
    double *cpu = calloc((size_t)reps, sizeof *cpu);
    long bad = 0, calls = 0;
    for (int rep = -1; rep < reps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();
        if (p2p) {
            for (long i = 0; i < iters; i++) {
                double out = (double)(rank * 1000000 + i), in = -1;
                MPI_Request r[2];
                MPI_Irecv(&in, 1, MPI_DOUBLE, other, 0, MPI_COMM_WORLD, &r[0]);
                MPI_Isend(&out, 1, MPI_DOUBLE, other, 0, MPI_COMM_WORLD, &r[1]);
                MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
                bad += in != (double)(other * 1000000 + i);
            }
            calls += 3 * iters;
        } else {
            for (long i = 0; i < iters; i++) {
                double v = (double)i, sum = 0;
                MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                bad += sum != (double)size * (double)i;
            }
            calls += iters;
        }
        if (rep >= 0) {
            double n = (double)(iters * (p2p ? 3 : 1));
            times[rep] = (bench_now_ns() - t0) / n;
            cpu[rep] = (bench_thread_cpu_ns() - c0) / n;
        }
    }
    if (bad) {
        fprintf(stderr, "rank %d: %ld wrong results\n", rank, bad);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        printf("ns_per_call %.2f\ncpu_ns_per_call %.2f\ncalls %ld\n", bench_median(times, (size_t)reps),
               bench_median(cpu, (size_t)reps), calls);
        fflush(stdout);
    }
    free(times);
    free(cpu);
    MPI_Finalize();
    return 0;
}
