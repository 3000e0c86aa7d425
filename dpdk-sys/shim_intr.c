/* RX interrupt wrappers: see shim_intr.h. */
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_epoll.h>
#include "shim_intr.h"

int shim_rx_intr_add(uint16_t port, uint16_t queue)
{
	return rte_eth_dev_rx_intr_ctl_q(port, queue, RTE_EPOLL_PER_THREAD,
					 RTE_INTR_EVENT_ADD, NULL);
}

int shim_rx_intr_enable(uint16_t port, uint16_t queue)
{
	return rte_eth_dev_rx_intr_enable(port, queue);
}

int shim_rx_intr_disable(uint16_t port, uint16_t queue)
{
	return rte_eth_dev_rx_intr_disable(port, queue);
}

int shim_rx_intr_wait(int timeout_ms)
{
	struct rte_epoll_event ev[4];

	return rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, 4, timeout_ms);
}
