/* C shim around DPDK's static inline fast-path functions (see shim.h). Compiled with the cflags
 * pkg-config gives for libdpdk, so the inlined code matches the installed DPDK. */
#include <rte_config.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <stdio.h>
#include <string.h>

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

static void roce_shim_flow_error(const struct rte_flow_error *e, int ret, char *err, unsigned int err_len)
{
	if (err == NULL || err_len == 0)
		return;
	snprintf(err, err_len, "%s", e->message ? e->message : strerror(-ret));
}

int roce_shim_flow_udp_sport(uint16_t port, uint32_t src_ip_be, uint16_t sport, uint16_t mask,
			     uint16_t queue, int create, struct rte_flow **out, char *err,
			     unsigned int err_len)
{
	struct rte_flow_attr attr = { .ingress = 1 };
	struct rte_flow_item_ipv4 ip_spec = { 0 }, ip_mask = { 0 };
	struct rte_flow_item_udp udp_spec = { 0 }, udp_mask = { 0 };
	ip_spec.hdr.src_addr = src_ip_be;
	ip_mask.hdr.src_addr = src_ip_be ? 0xffffffff : 0;
	udp_spec.hdr.src_port = rte_cpu_to_be_16(sport);
	udp_mask.hdr.src_port = rte_cpu_to_be_16(mask);
	udp_spec.hdr.dst_port = rte_cpu_to_be_16(4791);
	udp_mask.hdr.dst_port = 0xffff;
	struct rte_flow_item pattern[] = {
		{ .type = RTE_FLOW_ITEM_TYPE_ETH },
		{ .type = RTE_FLOW_ITEM_TYPE_IPV4, .spec = &ip_spec, .mask = &ip_mask },
		{ .type = RTE_FLOW_ITEM_TYPE_UDP, .spec = &udp_spec, .mask = &udp_mask },
		{ .type = RTE_FLOW_ITEM_TYPE_END },
	};
	struct rte_flow_action_queue q = { .index = queue };
	struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &q },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	struct rte_flow_error e = { 0 };
	if (!create) {
		int ret = rte_flow_validate(port, &attr, pattern, actions, &e);
		if (ret < 0)
			roce_shim_flow_error(&e, ret, err, err_len);
		return ret;
	}
	struct rte_flow *f = rte_flow_create(port, &attr, pattern, actions, &e);
	if (f == NULL) {
		int ret = rte_errno ? -rte_errno : -EINVAL;
		roce_shim_flow_error(&e, ret, err, err_len);
		return ret;
	}
	*out = f;
	return 0;
}

int roce_shim_flow_destroy(uint16_t port, struct rte_flow *flow)
{
	struct rte_flow_error e = { 0 };
	return rte_flow_destroy(port, flow, &e);
}
