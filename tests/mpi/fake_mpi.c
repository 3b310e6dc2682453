/* A library that is not an MPI a plugin knows: MPI_Init, MPI_Send and
 * MPI_Finalize and their PMPI_* names, nothing else (no MPI_Init_thread, no
 * Open MPI or MPICH symbol). tests/tests/mpi.rs preloads kprof's MPI plugin into
 * a program linked with it: the plugin must forward every call unchanged, say in
 * one line why it does not measure, and record nothing. Each call prints what it
 * received, so that the test sees the arguments arrive intact.
 */
#include <stdio.h>

int PMPI_Init(int *argc, char ***argv) {
    printf("init %d %s\n", *argc, (*argv)[1]);
    return 0;
}

int PMPI_Send(const void *buf, int count, void *type, int dest, int tag, void *comm) {
    printf("send %d %d %p %d %d %p\n", ((const int *)buf)[0], count, type, dest, tag, comm);
    return 7; /* a return code the plugin must pass through */
}

int PMPI_Finalize(void) {
    printf("finalize\n");
    return 0;
}

int MPI_Init(int *argc, char ***argv) { return PMPI_Init(argc, argv); }
int MPI_Send(const void *buf, int count, void *type, int dest, int tag, void *comm) {
    return PMPI_Send(buf, count, type, dest, tag, comm);
}
int MPI_Finalize(void) { return PMPI_Finalize(); }
