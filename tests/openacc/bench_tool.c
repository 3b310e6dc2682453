/*
 * bench_tool.c - an empty OpenACC tool for tests/benches/openacc_overhead.rs: it
 * registers an empty callback for events 1..25, so a run with it measures the
 * runtime's own dispatch of profiling callbacks (the floor of any tool).
 */
#include <kprof_acc_prof.h>

static void empty(acc_prof_info *p, acc_event_info *e, acc_api_info *a)
{
    (void)p;
    (void)e;
    (void)a;
}

void acc_register_library(acc_prof_reg reg, acc_prof_reg unreg, acc_prof_lookup_func lookup)
{
    (void)unreg;
    (void)lookup;
    for (int ev = acc_ev_device_init_start; ev < acc_ev_last; ev++)
        reg((acc_event_t)ev, empty, acc_reg);
}
