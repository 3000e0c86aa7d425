/* See shim.h. */
#include "shim.h"
#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_cycles.h>

uint16_t shim_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_rx_burst(port, queue, pkts, n);
}

int shim_rx_queue_count(uint16_t port, uint16_t queue)
{
	return rte_eth_rx_queue_count(port, queue);
}

uint16_t shim_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_tx_burst(port, queue, pkts, n);
}

struct rte_mbuf *shim_pktmbuf_alloc(struct rte_mempool *mp)
{
	return rte_pktmbuf_alloc(mp);
}

int shim_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **pkts, unsigned n)
{
	return rte_pktmbuf_alloc_bulk(mp, pkts, n);
}

void shim_pktmbuf_free(struct rte_mbuf *m)
{
	rte_pktmbuf_free(m);
}

int shim_errno(void)
{
	return rte_errno;
}

unsigned shim_lcore_id(void)
{
	return rte_lcore_id();
}

uint64_t shim_rdtsc(void)
{
	return rte_rdtsc();
}

uint64_t shim_tsc_hz(void)
{
	return rte_get_tsc_hz();
}
