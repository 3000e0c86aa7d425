/* C shim: out-of-line wrappers for DPDK's `static inline` fast-path functions,
 * which bindgen cannot link against. Each wrapper is one call or one field
 * access; they are compiled with the exact flags `pkg-config --cflags libdpdk`
 * gives, so they match the installed DPDK's struct layouts. */
#ifndef RPC_DPDK_SHIM_H
#define RPC_DPDK_SHIM_H
#include <stdint.h>
#include <rte_mbuf.h>

uint16_t shim_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
int shim_rx_queue_count(uint16_t port, uint16_t queue);
uint16_t shim_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
struct rte_mbuf *shim_pktmbuf_alloc(struct rte_mempool *mp);
/* rte_pktmbuf_pool_create, with its objects packed back to back in one
 * virtually contiguous span (RTE_MEMPOOL_F_NO_IOVA_CONTIG): net_af_xdp
 * registers [first object, first + n x object size) as its UMEM, which a
 * pool padded to keep objects inside 4 KiB pages (--no-huge) overruns.
 * NULL with rte_errno set on failure. */
struct rte_mempool *shim_pktmbuf_pool_create_packed(const char *name, unsigned n,
						    unsigned cache, uint16_t data_room,
						    int socket);
int shim_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **pkts, unsigned n);
void shim_pktmbuf_free(struct rte_mbuf *m);
int shim_errno(void);
unsigned shim_lcore_id(void);
uint64_t shim_rdtsc(void);
uint64_t shim_tsc_hz(void);
/* DPDK's software Toeplitz hash (rte_softrss) of `len` 32-bit words in host
 * order (an IPv4/UDP 4-tuple: source, destination, sport << 16 | dport), for
 * checking the engine's own hash against it. */
uint32_t shim_softrss(const uint32_t *tuple, uint32_t len, const uint8_t *key);
/* Bursts that survive a fault inside the driver (see shim.c): 0 on success
 * of installing the SIGSEGV/SIGBUS handler, -errno otherwise. A guarded burst
 * that faulted sets *faulted and returns 0; the mbufs the driver had taken or
 * allocated in it are lost (never freed twice). */
int shim_burst_guard_install(void);
uint64_t shim_burst_guard_faults(void);
uint16_t shim_rx_burst_guarded(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
			       uint16_t n, int *faulted);
/* Reads an unmapped page under the guard, as a memif burst does after the
 * PMD's unmap: 1 if the guard caught the fault, -errno if no page could be
 * mapped for the test. */
int shim_burst_guard_selftest(void);
uint16_t shim_tx_burst_guarded(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
			       uint16_t n, int *faulted);
#endif
