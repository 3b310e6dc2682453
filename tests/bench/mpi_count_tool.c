/*
 * mpi_count_tool.c - the least a PMPI tool can do, the floor of
 * tests/benches/mpi_overhead.rs: the four MPI functions the benchmark calls,
 * each counting its calls in a thread-local counter and forwarding to PMPI_*.
 * Preloaded like kprof's plugin; prints its counts at MPI_Finalize (stderr).
 *
 * Built with -DTIME_CALLS it also times each call with two reads of the TSC (the
 * clock kprof reads) and sums the durations: the least a tool that times every
 * call (mpiP, kprof) does, so the difference to it is what kprof does beyond
 * reading the clock.
 */
#include <mpi.h>
#include <stdio.h>

static __thread unsigned long n_isend, n_irecv, n_waitall, n_allreduce;

#ifdef TIME_CALLS
#include <x86intrin.h>
static __thread unsigned long long ticks;
#define TIMED(call)                                                                                \
    {                                                                                              \
        unsigned long long t0_ = __rdtsc();                                                        \
        int rc_ = (call);                                                                          \
        ticks += __rdtsc() - t0_;                                                                  \
        return rc_;                                                                                \
    }
#else
#define TIMED(call) return (call);
#endif

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    n_isend++;
    TIMED(PMPI_Isend(buf, count, type, dest, tag, comm, req));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    n_irecv++;
    TIMED(PMPI_Irecv(buf, count, type, source, tag, comm, req));
}

int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
    n_waitall++;
    TIMED(PMPI_Waitall(count, reqs, statuses));
}

int MPI_Allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    n_allreduce++;
    TIMED(PMPI_Allreduce(in, out, count, type, op, comm));
}

int MPI_Finalize(void)
{
    fprintf(stderr, "count tool: %lu %lu %lu %lu\n", n_isend, n_irecv, n_waitall, n_allreduce);
#ifdef TIME_CALLS
    fprintf(stderr, "count tool: %llu ticks in MPI\n", ticks);
#endif
    return PMPI_Finalize();
}
