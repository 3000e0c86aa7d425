/* See shim.h. */
#include "shim.h"
#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_lcore.h>
#include <rte_cycles.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <rte_thash.h>

/* The offload and mbuf flag values the engine writes as Rust constants
 * (engine/src/nic/checksum.rs): bindgen cannot evaluate RTE_BIT64, so the
 * build checks them here against the installed headers. */
_Static_assert(RTE_ETH_TX_OFFLOAD_IPV4_CKSUM == (1ULL << 1), "tx ipv4 cksum bit");
_Static_assert(RTE_ETH_TX_OFFLOAD_UDP_CKSUM == (1ULL << 2), "tx udp cksum bit");
_Static_assert(RTE_ETH_RX_OFFLOAD_IPV4_CKSUM == (1ULL << 1), "rx ipv4 cksum bit");
_Static_assert(RTE_ETH_RX_OFFLOAD_UDP_CKSUM == (1ULL << 2), "rx udp cksum bit");
_Static_assert(RTE_MBUF_F_TX_IPV4 == (1ULL << 55), "mbuf tx ipv4");
_Static_assert(RTE_MBUF_F_TX_IP_CKSUM == (1ULL << 54), "mbuf tx ip cksum");
_Static_assert(RTE_MBUF_F_TX_UDP_CKSUM == (3ULL << 52), "mbuf tx udp cksum");
_Static_assert(RTE_MBUF_F_RX_IP_CKSUM_BAD == (1ULL << 4), "mbuf rx ip bad");
_Static_assert(RTE_MBUF_F_RX_IP_CKSUM_GOOD == (1ULL << 7), "mbuf rx ip good");
_Static_assert(RTE_MBUF_F_RX_L4_CKSUM_BAD == (1ULL << 3), "mbuf rx l4 bad");
_Static_assert(RTE_MBUF_F_RX_L4_CKSUM_GOOD == (1ULL << 8), "mbuf rx l4 good");
_Static_assert(RTE_ETH_RSS_NONFRAG_IPV4_UDP == (1ULL << 5), "rss ipv4 udp");
/* engine/src/dpdk/mbuf.rs writes tx_offload as l2_len | l3_len << 7 | l4_len << 16. */
_Static_assert(offsetof(struct rte_mbuf, tx_offload) % 8 == 0, "tx_offload is a u64");

uint32_t shim_softrss(const uint32_t *tuple, uint32_t len, const uint8_t *key)
{
	return rte_softrss((uint32_t *)tuple, len, key);
}

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

struct rte_mempool *shim_pktmbuf_pool_create_packed(const char *name, unsigned n,
						    unsigned cache, uint16_t data_room,
						    int socket)
{
	struct rte_pktmbuf_pool_private priv = {
		.mbuf_data_room_size = data_room,
		.mbuf_priv_size = 0,
	};
	struct rte_mempool *mp;
	int rc;

	mp = rte_mempool_create_empty(name, n, sizeof(struct rte_mbuf) + data_room, cache,
				      sizeof(priv), socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (mp == NULL)
		return NULL;
	rc = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (rc != 0)
		goto fail;
	rte_pktmbuf_pool_init(mp, &priv);
	rc = rte_mempool_populate_default(mp);
	if (rc < 0)
		goto fail;
	/* One memory chunk, or the UMEM span would not be the pool. */
	if (mp->nb_mem_chunks != 1) {
		rc = -ENOMEM;
		goto fail;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
fail:
	rte_mempool_free(mp);
	rte_errno = -rc;
	return NULL;
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

/* Guarded bursts. DPDK 22.11's memif PMD unmaps a peer's shared regions from
 * its interrupt thread when the peer disconnects (memif_disconnect ->
 * memif_free_regions), while a worker may be inside eth_memif_rx/tx past
 * their one check of the connected flag: the worker then reads unmapped
 * memory (or a freed region) and the process dies of SIGSEGV. No lock in the
 * PMD orders the two, so the burst itself is guarded: a fault inside it
 * jumps back here and the burst reports it instead of killing the process.
 * sigsetjmp without the signal mask costs no system call; SA_NODEFER keeps
 * SIGSEGV unblocked after the jump. A fault outside a guarded burst goes to
 * the handler installed before ours (Rust's stack-overflow report) or to the
 * default action. */
/* volatile: the stores around a burst must happen, in order, even where
 * the compiler can see the burst never reads them (the self-test). */
static __thread sigjmp_buf *volatile guard_env;
static struct sigaction prev_segv;
static struct sigaction prev_bus;
static uint64_t guard_faults;

static void guard_handler(int sig, siginfo_t *info, void *uctx)
{
	sigjmp_buf *env = guard_env;
	struct sigaction *prev;

	if (env != NULL) {
		guard_env = NULL;
		__atomic_add_fetch(&guard_faults, 1, __ATOMIC_RELAXED);
		siglongjmp(*env, 1);
	}
	prev = sig == SIGBUS ? &prev_bus : &prev_segv;
	if (prev->sa_flags & SA_SIGINFO) {
		prev->sa_sigaction(sig, info, uctx);
		return;
	}
	if (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN) {
		/* Returning re-executes the faulting access under the default
		 * action: the process dies as it would have without us. */
		signal(sig, SIG_DFL);
		return;
	}
	prev->sa_handler(sig);
}

int shim_burst_guard_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &prev_segv) != 0)
		return -errno;
	if (sigaction(SIGBUS, &sa, &prev_bus) != 0)
		return -errno;
	return 0;
}

uint64_t shim_burst_guard_faults(void)
{
	return __atomic_load_n(&guard_faults, __ATOMIC_RELAXED);
}

uint16_t shim_rx_burst_guarded(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
			       uint16_t n, int *faulted)
{
	sigjmp_buf env;
	uint16_t got;

	if (sigsetjmp(env, 0) != 0) {
		*faulted = 1;
		return 0;
	}
	guard_env = &env;
	got = rte_eth_rx_burst(port, queue, pkts, n);
	guard_env = NULL;
	return got;
}

uint16_t shim_tx_burst_guarded(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
			       uint16_t n, int *faulted)
{
	sigjmp_buf env;
	uint16_t sent;

	if (sigsetjmp(env, 0) != 0) {
		*faulted = 1;
		return 0;
	}
	guard_env = &env;
	sent = rte_eth_tx_burst(port, queue, pkts, n);
	guard_env = NULL;
	return sent;
}

int shim_burst_guard_selftest(void)
{
	sigjmp_buf env;
	volatile int faulted = 0;
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED)
		return -errno;
	/* The PMD's case: memory that was mapped, unmapped under the reader. */
	munmap(page, 4096);
	if (sigsetjmp(env, 0) == 0) {
		guard_env = &env;
		(void)*(volatile char *)page;
		guard_env = NULL;
	} else {
		faulted = 1;
	}
	return faulted;
}
