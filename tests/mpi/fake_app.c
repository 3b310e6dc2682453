/* A program on tests/mpi/fake_mpi.c (see there). */
#include <stdio.h>

int MPI_Init(int *argc, char ***argv);
int MPI_Send(const void *buf, int count, void *type, int dest, int tag, void *comm);
int MPI_Finalize(void);

int main(int argc, char **argv) {
    int v = 42;
    MPI_Init(&argc, &argv);
    int rc = MPI_Send(&v, 1, (void *)0x1234, 3, 9, (void *)0x5678);
    printf("rc %d\n", rc);
    return MPI_Finalize();
}
