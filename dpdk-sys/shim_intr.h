/* C shim for RX interrupts (the adaptive idle mode): the thread's own epoll
 * instance (RTE_EPOLL_PER_THREAD) is a macro, and an epoll wait needs an
 * event array; each wrapper is one DPDK call. */
#ifndef RPC_DPDK_SHIM_INTR_H
#define RPC_DPDK_SHIM_INTR_H
#include <stdint.h>

/* Adds queue `queue`'s RX interrupt to the calling thread's epoll instance:
 * 0, or -errno (-ENOTSUP: the driver has no RX interrupt vector). */
int shim_rx_intr_add(uint16_t port, uint16_t queue);
/* Unmasks (enable) or masks (disable) the queue's RX interrupt: 0 or -errno. */
int shim_rx_intr_enable(uint16_t port, uint16_t queue);
int shim_rx_intr_disable(uint16_t port, uint16_t queue);
/* Waits on the calling thread's epoll instance up to `timeout_ms`: the
 * number of events (the interrupt's counter is read by DPDK), 0 on timeout,
 * < 0 on error. */
int shim_rx_intr_wait(int timeout_ms);
#endif
