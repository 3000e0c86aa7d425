/* Headers bindgen reads. Only the allowlist in build.rs is bound. */
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_log.h>
#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_ring.h>
#include <rte_eth_ring.h>
#include "shim.h"
#include "shim_intr.h"
