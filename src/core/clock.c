/*
 * clock.c -- the monotonic clock, for compile times, promotion deadlines
 * and the compiler's time limit.
 */
#include <time.h>

#include "core.h"

double wb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
