/* C shim around DPDK's static inline fast-path functions (see shim.h). Compiled with the cflags
 * pkg-config gives for libdpdk, so the inlined code matches the installed DPDK. */
#include <rte_config.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>

#include "shim.h"

uint16_t roce_shim_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_rx_burst(port, queue, pkts, n);
}

uint16_t roce_shim_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_tx_burst(port, queue, pkts, n);
}

struct rte_mbuf *roce_shim_pktmbuf_alloc(struct rte_mempool *mp)
{
	return rte_pktmbuf_alloc(mp);
}

/* rte_pktmbuf_alloc, then the data start moved back (at most 63 bytes of headroom) so that byte
 * `lead` of the frame sits on a cache line. NULL when the pool is exhausted. */
struct rte_mbuf *roce_shim_pktmbuf_alloc_aligned(struct rte_mempool *mp, uint16_t lead)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	if (m == NULL)
		return NULL;
	uint16_t back = (uint16_t)(((uintptr_t)m->buf_addr + m->data_off + lead) & (RTE_CACHE_LINE_SIZE - 1));
	if (back <= m->data_off)
		m->data_off = (uint16_t)(m->data_off - back);
	return m;
}

int roce_shim_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned int n)
{
	return rte_pktmbuf_alloc_bulk(mp, mbufs, n);
}

void roce_shim_pktmbuf_free(struct rte_mbuf *m)
{
	rte_pktmbuf_free(m);
}

void roce_shim_pktmbuf_free_bulk(struct rte_mbuf **mbufs, unsigned int n)
{
	rte_pktmbuf_free_bulk(mbufs, n);
}

void roce_shim_pktmbuf_reset(struct rte_mbuf *m)
{
	rte_pktmbuf_reset(m);
}

uint8_t *roce_shim_pktmbuf_mtod(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, uint8_t *);
}

char *roce_shim_pktmbuf_append(struct rte_mbuf *m, uint16_t len)
{
	return rte_pktmbuf_append(m, len);
}

char *roce_shim_pktmbuf_prepend(struct rte_mbuf *m, uint16_t len)
{
	return rte_pktmbuf_prepend(m, len);
}

int roce_shim_pktmbuf_trim(struct rte_mbuf *m, uint16_t len)
{
	return rte_pktmbuf_trim(m, len);
}

uint16_t roce_shim_pktmbuf_headroom(const struct rte_mbuf *m)
{
	return rte_pktmbuf_headroom(m);
}

uint16_t roce_shim_pktmbuf_tailroom(const struct rte_mbuf *m)
{
	return rte_pktmbuf_tailroom(m);
}

uint16_t roce_shim_pktmbuf_data_len(const struct rte_mbuf *m)
{
	return rte_pktmbuf_data_len(m);
}

uint32_t roce_shim_pktmbuf_pkt_len(const struct rte_mbuf *m)
{
	return rte_pktmbuf_pkt_len(m);
}

uint16_t roce_shim_pktmbuf_nb_segs(const struct rte_mbuf *m)
{
	return m->nb_segs;
}

uint16_t roce_shim_pktmbuf_buf_len(const struct rte_mbuf *m)
{
	return m->buf_len;
}

uint64_t roce_shim_pktmbuf_ol_flags(const struct rte_mbuf *m)
{
	return m->ol_flags;
}

void roce_shim_pktmbuf_set_ol_flags(struct rte_mbuf *m, uint64_t flags)
{
	m->ol_flags = flags;
}

void roce_shim_pktmbuf_set_tx_lens(struct rte_mbuf *m, uint8_t l2_len, uint16_t l3_len)
{
	m->l2_len = l2_len;
	m->l3_len = l3_len;
}

uint8_t *roce_shim_pktmbuf_data(struct rte_mbuf *m, uint16_t *len)
{
	*len = m->data_len;
	return rte_pktmbuf_mtod(m, uint8_t *);
}

/* Largest data_len of the first segment: the data room after its current start. Chains report
 * their current length (we never grow them). */
uint16_t roce_shim_pktmbuf_room(const struct rte_mbuf *m)
{
	if (m->nb_segs != 1)
		return m->data_len;
	return (uint16_t)(m->buf_len - m->data_off);
}

/* Sets the length of a single-segment mbuf; -1 (nothing changed) if it does not fit. */
int roce_shim_pktmbuf_set_len(struct rte_mbuf *m, uint16_t len)
{
	if (m->nb_segs != 1 || len > m->buf_len - m->data_off)
		return -1;
	m->data_len = len;
	m->pkt_len = len;
	return 0;
}

int roce_shim_errno(void)
{
	return rte_errno;
}

unsigned int roce_shim_lcore_id(void)
{
	return rte_lcore_id();
}

uint64_t roce_shim_get_tsc_cycles(void)
{
	return rte_get_tsc_cycles();
}

unsigned int roce_shim_mempool_in_use_count(const struct rte_mempool *mp)
{
	return rte_mempool_in_use_count(mp);
}
