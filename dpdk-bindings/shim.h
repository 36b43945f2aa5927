/* C shim: DPDK's fast path is made of static inline functions and macros that bindgen cannot
 * link against. Each roce_shim_* wraps exactly one of them. Keep in sync with shim.c. */
#ifndef ROCE_DPDK_SHIM_H
#define ROCE_DPDK_SHIM_H

#include <stdint.h>

struct rte_mbuf;
struct rte_mempool;

uint16_t roce_shim_rx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
uint16_t roce_shim_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
struct rte_mbuf *roce_shim_pktmbuf_alloc(struct rte_mempool *mp);
struct rte_mbuf *roce_shim_pktmbuf_alloc_aligned(struct rte_mempool *mp, uint16_t lead);
int roce_shim_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **mbufs, unsigned int n);
void roce_shim_pktmbuf_free(struct rte_mbuf *m);
void roce_shim_pktmbuf_free_bulk(struct rte_mbuf **mbufs, unsigned int n);
void roce_shim_pktmbuf_reset(struct rte_mbuf *m);
uint8_t *roce_shim_pktmbuf_mtod(struct rte_mbuf *m);
char *roce_shim_pktmbuf_append(struct rte_mbuf *m, uint16_t len);
char *roce_shim_pktmbuf_prepend(struct rte_mbuf *m, uint16_t len);
int roce_shim_pktmbuf_trim(struct rte_mbuf *m, uint16_t len);
uint16_t roce_shim_pktmbuf_headroom(const struct rte_mbuf *m);
uint16_t roce_shim_pktmbuf_tailroom(const struct rte_mbuf *m);
uint16_t roce_shim_pktmbuf_data_len(const struct rte_mbuf *m);
uint32_t roce_shim_pktmbuf_pkt_len(const struct rte_mbuf *m);
uint16_t roce_shim_pktmbuf_nb_segs(const struct rte_mbuf *m);
uint16_t roce_shim_pktmbuf_buf_len(const struct rte_mbuf *m);
uint64_t roce_shim_pktmbuf_ol_flags(const struct rte_mbuf *m);
void roce_shim_pktmbuf_set_ol_flags(struct rte_mbuf *m, uint64_t flags);
void roce_shim_pktmbuf_set_tx_lens(struct rte_mbuf *m, uint8_t l2_len, uint16_t l3_len);
/* Single-segment helpers: one call instead of several on the per-frame path. */
uint8_t *roce_shim_pktmbuf_data(struct rte_mbuf *m, uint16_t *len);
uint16_t roce_shim_pktmbuf_room(const struct rte_mbuf *m);
int roce_shim_pktmbuf_set_len(struct rte_mbuf *m, uint16_t len);
int roce_shim_errno(void);
unsigned int roce_shim_lcore_id(void);
uint64_t roce_shim_get_tsc_cycles(void);
unsigned int roce_shim_mempool_in_use_count(const struct rte_mempool *mp);
/* rte_flow: IPv4/UDP frames to port 4791 whose UDP source port matches `sport` under `mask` (and,
 * when `src_ip_be` is not 0, whose IPv4 source is that address) go to RX queue `queue`. With
 * `create` 0 the rule is only validated. Returns 0 and (when created) the flow in *out, or a
 * negative errno with DPDK's message in `err`. */
struct rte_flow;
int roce_shim_flow_udp_sport(uint16_t port, uint32_t src_ip_be, uint16_t sport, uint16_t mask,
			     uint16_t queue, int create, struct rte_flow **out, char *err,
			     unsigned int err_len);
int roce_shim_flow_destroy(uint16_t port, struct rte_flow *flow);

#endif
