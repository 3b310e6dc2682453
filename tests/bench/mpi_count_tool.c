/*
 * mpi_count_tool.c - the least a PMPI tool can do, the floor of
 * tests/benches/mpi_overhead.rs: the four MPI functions the benchmark calls,
 * each counting its calls in a thread-local counter and forwarding to PMPI_*.
 * Preloaded like kprof's plugin; prints its counts at MPI_Finalize (stderr).
 */
#include <mpi.h>
#include <stdio.h>

static __thread unsigned long n_isend, n_irecv, n_waitall, n_allreduce;

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    n_isend++;
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    n_irecv++;
    return PMPI_Irecv(buf, count, type, source, tag, comm, req);
}

int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
    n_waitall++;
    return PMPI_Waitall(count, reqs, statuses);
}

int MPI_Allreduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    n_allreduce++;
    return PMPI_Allreduce(in, out, count, type, op, comm);
}

int MPI_Finalize(void)
{
    fprintf(stderr, "count tool: %lu %lu %lu %lu\n", n_isend, n_irecv, n_waitall, n_allreduce);
    return PMPI_Finalize();
}
