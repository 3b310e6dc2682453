/* An MPI program that knows nothing of kprof, for the call-stack samples of
 * tests/tests/mpi.rs: it must run unchanged under `kprof run --sample-hz`, and
 * its samples land under the MPI call they were taken in.
 *
 * ROUNDS (6) times, every rank runs rank_compute (2 steps, outside any
 * MPI call) and then MPI_Allreduce with a user-defined sum whose function
 * (user_sum, run by MPI inside MPI_Allreduce) spends 8 steps in op_work
 * before it adds. A step is STEP (6000000, about 10 ms) dependent
 * floating-point operations. Its arguments are not read. Each rank prints
 * its rank and the reduced values (the same with or without a tool) and
 * exits 0.
 */
#include <mpi.h>
#include <stdio.h>

#define ROUNDS 6
#define STEP 6000000L

__attribute__((noinline)) static double op_work(double x) {
    for (long i = 0; i < 8 * STEP; i++)
        x = x * 0.9999999 + 1e-9;
    return x;
}

__attribute__((noinline)) static double rank_compute(double x) {
    for (long i = 0; i < 2 * STEP; i++)
        x = x * 0.9999998 + 2e-9;
    return x;
}

/* A commutative sum that works hard first (its work never changes the sum:
 * op_work's value is positive). */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        double w = op_work(1.0 + b[i]);
        b[i] = a[i] + b[i];
        if (w < 0.0)
            b[i] += w;
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op;
    MPI_Op_create(user_sum, 1, &op);
    double total = 0.0, local = 0.0;
    for (int r = 0; r < ROUNDS; r++) {
        local = rank_compute(local + rank);
        double sum = 0.0, mine = (double)(rank + 1) * (r + 1);
        MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
        total += sum;
    }
    MPI_Op_free(&op);
    printf("rank %d of %d: reduced %.1f, local %.6f\n", rank, size, total, local);
    MPI_Finalize();
    return 0;
}
