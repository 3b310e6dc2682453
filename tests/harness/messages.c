/* Messages through the annotation API (kprof_message), with known counts and
 * bytes per peer, from two threads, as a process of rank argv[1] of a job would
 * record them:
 *   main thread, channel "conveyor 0": to peer rank+1: one call of 5 messages,
 *     40 bytes; to peer rank+2: 3 calls of 1 message, 100 bytes each
 *   a second thread, channel "conveyor 0": from peer 7: 7 calls of 1 message,
 *     16 bytes each; channel "world": to peer 0: 2 messages, 1 MiB in all
 * Prints "sent <messages> <bytes>" of "conveyor 0" (its own count). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <kprof.h>

static void *receiver(void *arg)
{
    (void)arg;
    for (int i = 0; i < 7; i++)
        kprof_message("conveyor 0", KPROF_RECEIVE, 7, 1, 16);
    kprof_message("world", KPROF_SEND, 0, 2, 1 << 20);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned rank = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    pthread_t t;
    pthread_create(&t, NULL, receiver, NULL);
    kprof_region_begin("phase");
    kprof_message("conveyor 0", KPROF_SEND, rank + 1, 5, 40);
    for (int i = 0; i < 3; i++)
        kprof_message("conveyor 0", KPROF_SEND, rank + 2, 1, 100);
    kprof_region_end("phase");
    pthread_join(t, NULL);
    printf("sent %d %d\n", 5 + 3, 40 + 300);
    return 0;
}
