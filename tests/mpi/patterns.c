/* MPI programs with known communication, for kprof's MPI plugin tests
 * (tests/tests/mpi.rs). Run on 4 ranks:
 *
 *   patterns <out-dir> <phase>...     phases: ring alltoall subcomm collectives
 *                                              types sleep threads exit3
 *                                              abort1 nofinalize halffinalize kill2
 *
 * Each phase runs inside a kprof region of its name (kprof.h, so the MPI nodes
 * have a known call path) and counts itself, per peer in MPI_COMM_WORLD ranks,
 * every point-to-point message it sends and receives. At the end each rank writes
 * those counts to <out-dir>/expect.<rank> ("send|recv <peer> <count> <bytes>") and
 * prints one line of results computed from the received data, which must be the
 * same with and without kprof. `exit3` makes every rank exit with status 3 after
 * MPI_Finalize. Endings that never reach a complete MPI_Finalize, after the
 * counts are written: `abort1` (rank 1 calls MPI_Abort(5) while the others wait
 * in a barrier), `nofinalize` (every rank returns without MPI_Finalize),
 * `halffinalize` (only the even ranks call MPI_Finalize), `kill2` (rank 2 kills
 * itself with SIGKILL before MPI_Finalize: it writes no profile, and the launcher
 * ends the others).
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kprof.h"

#define MAXP 64

static int rank, size;
static long sent_n[MAXP], sent_b[MAXP], recv_n[MAXP], recv_b[MAXP];
static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;
static long checksum;

static void count_send(int world_peer, long bytes) {
    pthread_mutex_lock(&counts_lock);
    sent_n[world_peer]++;
    sent_b[world_peer] += bytes;
    pthread_mutex_unlock(&counts_lock);
}

static void count_recv(int world_peer, long bytes) {
    pthread_mutex_lock(&counts_lock);
    recv_n[world_peer]++;
    recv_b[world_peer] += bytes;
    pthread_mutex_unlock(&counts_lock);
}

/* Ring: 3 rounds of MPI_Send/MPI_Recv to the right neighbour ((rank+1)*8 bytes),
 * the third received with MPI_ANY_SOURCE and MPI_STATUS_IGNORE; then one
 * MPI_Sendrecv round to the left. */
static void ring(void) {
    kprof_region_begin("ring");
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int n = rank + 1, buf[MAXP];
    for (int round = 0; round < 3; round++) {
        int mine[MAXP];
        for (int i = 0; i < n; i++) mine[i] = rank * 100 + round;
        int from_n = left + 1;
        if (rank % 2 == 0) {
            MPI_Send(mine, 2 * n, MPI_INT, right, round, MPI_COMM_WORLD);
            MPI_Recv(buf, 2 * from_n, MPI_INT, round == 2 ? MPI_ANY_SOURCE : left, round,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 2 * from_n, MPI_INT, round == 2 ? MPI_ANY_SOURCE : left, round,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(mine, 2 * n, MPI_INT, right, round, MPI_COMM_WORLD);
        }
        count_send(right, 8L * n);
        count_recv(left, 8L * from_n);
        checksum += buf[0];
    }
    double out = rank, in = -1;
    MPI_Status st;
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, left, 9, &in, 1, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &st);
    count_send(left, 8);
    count_recv(st.MPI_SOURCE, 8);
    checksum += (long)in;
    kprof_region_end("ring");
}

/* All to all, point to point: to every other rank q, q+1 messages of
 * rank*10+q+1 ints, by MPI_Isend; the receives posted by MPI_Irecv. The first
 * half of the requests completes by MPI_Waitall (statuses ignored), the rest by
 * MPI_Testsome until done. */
static void alltoall(void) {
    kprof_region_begin("alltoall");
    enum { MAXM = 1024, MAXLEN = 1000 };
    static MPI_Request reqs[MAXM];
    static int bufs[MAXM][MAXLEN];
    int nreq = 0;
    for (int q = 0; q < size; q++) {
        if (q == rank) continue;
        for (int m = 0; m <= rank; m++) { /* from q: rank+1 messages of q*10+rank+1 ints */
            MPI_Irecv(bufs[nreq], q * 10 + rank + 1, MPI_INT, q, 100 + m, MPI_COMM_WORLD,
                      &reqs[nreq]);
            nreq++;
            count_recv(q, 4L * (q * 10 + rank + 1));
        }
    }
    int nrecv = nreq;
    static int payload[MAXLEN];
    for (int i = 0; i < MAXLEN; i++) payload[i] = rank;
    for (int q = 0; q < size; q++) {
        if (q == rank) continue;
        for (int m = 0; m <= q; m++) {
            MPI_Isend(payload, rank * 10 + q + 1, MPI_INT, q, 100 + m, MPI_COMM_WORLD,
                      &reqs[nreq]);
            nreq++;
            count_send(q, 4L * (rank * 10 + q + 1));
        }
    }
    int half = nreq / 2;
    MPI_Waitall(half, reqs, MPI_STATUSES_IGNORE);
    int left = nreq - half;
    static int idx[MAXM];
    static MPI_Status sts[MAXM];
    while (left > 0) {
        int out = 0;
        MPI_Testsome(nreq - half, reqs + half, &out, idx, sts);
        if (out != MPI_UNDEFINED) left -= out;
    }
    for (int i = 0; i < nrecv; i++) checksum += bufs[i][0];
    kprof_region_end("alltoall");
}

/* A sub-communicator: ranks split by parity, ordered backwards (key -rank), so
 * sub-rank 0 is the highest world rank. Each sends 5 doubles to the next
 * sub-rank with MPI_Isend and receives with MPI_Irecv + MPI_Wait; then one
 * message on a duplicate of MPI_COMM_WORLD to world rank 0, received there
 * with MPI_ANY_SOURCE and MPI_Waitany. */
static void subcomm(void) {
    kprof_region_begin("subcomm");
    MPI_Comm sub, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &sub);
    int srank, ssize;
    MPI_Comm_rank(sub, &srank);
    MPI_Comm_size(sub, &ssize);
    int to = (srank + 1) % ssize, from = (srank + ssize - 1) % ssize;
    /* world rank of sub-rank k: the ranks of this parity, highest first */
    int members[MAXP], nm = 0;
    for (int w = size - 1; w >= 0; w--)
        if (w % 2 == rank % 2) members[nm++] = w;
    double out[5] = {rank, rank, rank, rank, rank}, in[5];
    MPI_Request r[2];
    MPI_Irecv(in, 5, MPI_DOUBLE, from, 7, sub, &r[0]);
    MPI_Isend(out, 5, MPI_DOUBLE, to, 7, sub, &r[1]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    count_send(members[to], 40);
    count_recv(members[from], 40);
    checksum += (long)in[0];

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (rank == 0) {
        MPI_Request rr[MAXP];
        int got[MAXP];
        for (int i = 0; i < size - 1; i++)
            MPI_Irecv(&got[i], 1, MPI_INT, MPI_ANY_SOURCE, 3, dup, &rr[i]);
        for (int i = 0; i < size - 1; i++) {
            int which;
            MPI_Status st;
            MPI_Waitany(size - 1, rr, &which, &st);
            count_recv(st.MPI_SOURCE, 4);
            checksum += got[which];
        }
    } else {
        MPI_Send(&rank, 1, MPI_INT, 0, 3, dup);
        count_send(0, 4);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&sub);
    kprof_region_end("subcomm");
}

/* Every wrapped collective once, with known sizes. */
static void collectives(void) {
    kprof_region_begin("collectives");
    static double d[256], e[256 * MAXP];
    static int counts[MAXP], displs[MAXP], mine[MAXP];
    for (int i = 0; i < size; i++) {
        counts[i] = i + 1; /* to (or from) rank i: i+1 elements */
        mine[i] = rank + 1; /* from rank i in MPI_Alltoallv: this rank's count */
        displs[i] = i * 8;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    d[0] = rank;
    MPI_Bcast(d, 100, MPI_DOUBLE, 1, MPI_COMM_WORLD);                 /* 800 bytes */
    MPI_Reduce(d, e, 10, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);       /* 80 */
    MPI_Allreduce(MPI_IN_PLACE, d, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* 8 */
    MPI_Allgather(d, 4, MPI_DOUBLE, e, 4, MPI_DOUBLE, MPI_COMM_WORLD); /* 32 / 32*size */
    MPI_Allgatherv(d, rank + 1, MPI_DOUBLE, e, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoall(d, 2, MPI_DOUBLE, e, 2, MPI_DOUBLE, MPI_COMM_WORLD); /* 16*size */
    MPI_Alltoallv(d, counts, displs, MPI_DOUBLE, e, mine, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Gather(d, 3, MPI_DOUBLE, e, 3, MPI_DOUBLE, 2, MPI_COMM_WORLD);
    MPI_Gatherv(d, rank + 1, MPI_DOUBLE, e, counts, displs, MPI_DOUBLE, 2, MPI_COMM_WORLD);
    MPI_Scatter(e, 5, MPI_DOUBLE, d, 5, MPI_DOUBLE, 3, MPI_COMM_WORLD);
    MPI_Scatterv(e, counts, displs, MPI_DOUBLE, d, rank + 1, MPI_DOUBLE, 3, MPI_COMM_WORLD);
    checksum += (long)e[0];
    kprof_region_end("collectives");
}

/* Derived datatypes freed and created again: 2 doubles x 3 (48 bytes) to the
 * right, then, once that type is freed, 2 ints x 5 (40 bytes), whose datatype
 * MPI may give the freed one's handle (Open MPI does: the same heap block).
 * Each round sends to the right and receives from the left; then a broadcast
 * of one element of the second type from rank 0. */
static void types(void) {
    kprof_region_begin("types");
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double d[6] = {rank, 0, 0, 0, 0, 0}, in[6];
    int k[10] = {rank}, kin[10];
    MPI_Datatype t;
    MPI_Type_contiguous(3, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    MPI_Sendrecv(d, 2, t, right, 7, in, 2, t, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    count_send(right, 48);
    count_recv(left, 48);
    MPI_Type_free(&t);
    MPI_Type_contiguous(5, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Sendrecv(k, 2, t, right, 8, kin, 2, t, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    count_send(right, 40);
    count_recv(left, 40);
    MPI_Bcast(k, 1, t, 0, MPI_COMM_WORLD);
    MPI_Type_free(&t);
    checksum += (long)in[0] + kin[0];
    kprof_region_end("types");
}

/* The last rank sleeps 1 s before an MPI_Allreduce: the others wait in it (a
 * second, so that ranks that reach it late on a loaded machine still wait most
 * of it, far from the late rank's own short wait). */
static void sleep_phase(void) {
    kprof_region_begin("sleep");
    if (rank == size - 1) usleep(1000 * 1000);
    long v = rank, total = 0;
    MPI_Allreduce(&v, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    checksum += total;
    kprof_region_end("sleep");
}

/* Two threads each exchange 50 messages of 16 bytes with the partner rank
 * (rank ^ 1) under MPI_THREAD_MULTIPLE, tags by thread. */
static void *exchange(void *arg) {
    int t = (int)(long)arg, partner = rank ^ 1;
    for (int i = 0; i < 50; i++) {
        long out[2] = {rank, i}, in[2];
        MPI_Request r[2];
        MPI_Irecv(in, 2, MPI_LONG, partner, 500 + t, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(out, 2, MPI_LONG, partner, 500 + t, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        count_send(partner, 16);
        count_recv(partner, 16);
    }
    return NULL;
}

static void threads(void) {
    kprof_region_begin("threads");
    pthread_t th[2];
    for (long t = 0; t < 2; t++) pthread_create(&th[t], NULL, exchange, (void *)t);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    kprof_region_end("threads");
}

int main(int argc, char **argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || size > MAXP) {
        if (rank == 0) fprintf(stderr, "usage: patterns <out-dir> <phase>...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int status = 0, abort1 = 0, nofinalize = 0, halffinalize = 0, kill2 = 0;
    for (int i = 2; i < argc; i++) {
        const char *p = argv[i];
        if (!strcmp(p, "exit3")) status = 3;
        else if (!strcmp(p, "abort1")) abort1 = 1;
        else if (!strcmp(p, "nofinalize")) nofinalize = 1;
        else if (!strcmp(p, "halffinalize")) halffinalize = 1;
        else if (!strcmp(p, "kill2")) kill2 = 1;
        else if (!strcmp(p, "ring")) ring();
        else if (!strcmp(p, "alltoall")) alltoall();
        else if (!strcmp(p, "subcomm")) subcomm();
        else if (!strcmp(p, "collectives")) collectives();
        else if (!strcmp(p, "types")) types();
        else if (!strcmp(p, "sleep")) sleep_phase();
        else if (!strcmp(p, "threads")) {
            if (provided < MPI_THREAD_MULTIPLE) {
                fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            threads();
        } else {
            fprintf(stderr, "unknown phase %s\n", p);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/expect.%d", argv[1], rank);
    FILE *f = fopen(path, "w");
    if (!f) MPI_Abort(MPI_COMM_WORLD, 4);
    for (int q = 0; q < size; q++) {
        if (sent_n[q]) fprintf(f, "send %d %ld %ld\n", q, sent_n[q], sent_b[q]);
        if (recv_n[q]) fprintf(f, "recv %d %ld %ld\n", q, recv_n[q], recv_b[q]);
    }
    fclose(f);
    printf("rank %d of %d: checksum %ld\n", rank, size, checksum);
    fflush(stdout);
    if (abort1) {
        if (rank == 1) MPI_Abort(MPI_COMM_WORLD, 5);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (nofinalize || (halffinalize && rank % 2 == 1)) return status;
    if (kill2 && rank == 2) raise(SIGKILL);
    MPI_Finalize();
    return status;
}
