/* A known imbalance for the concurrency view: in each of ROUNDS parallel
 * regions of 2 threads, thread 1 sleeps SLEEP_US while thread 0 has nothing to
 * do and waits in the region's implicit barrier. So about half of the two
 * threads' time is waiting in a barrier, and half is parallel work. */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#define ROUNDS 3
#define SLEEP_US 200000

int main(void) {
    int slept[2] = {0, 0};
    for (int r = 0; r < ROUNDS; r++) {
#pragma omp parallel num_threads(2)
        {
            int me = omp_get_thread_num();
            if (me == 1) {
                usleep(SLEEP_US);
            }
            slept[me] += 1; /* each thread its own element: no synchronization */
        }
    }
    printf("rounds %d %d\n", slept[0], slept[1]);
    return slept[0] == ROUNDS && slept[1] == ROUNDS ? 0 : 1;
}
