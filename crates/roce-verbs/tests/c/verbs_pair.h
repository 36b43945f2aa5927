/*
 * The helpers of the one-process verbs programs (verbs_self.c, verbs_lent.c): a check line, a
 * bounded completion poll, an RC QP taken to RTS toward a GID, one signaled work request.
 */
#ifndef VERBS_PAIR_H
#define VERBS_PAIR_H

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int failures;

static inline void check(const char *what, int ok)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

/* One completion from `cq` within 10 s, or a zeroed one with status -1. */
static inline struct ibv_wc poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	time_t end = time(NULL) + 10;
	while (time(NULL) < end) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n == 1)
			return wc;
		if (n < 0)
			break;
	}
	memset(&wc, 0, sizeof wc);
	wc.status = (enum ibv_wc_status)-1;
	return wc;
}

static inline int to_rts(struct ibv_qp *qp, uint32_t dest_qpn, union ibv_gid gid, int gid_index)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 7;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static inline int post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t id, struct ibv_mr *mr,
		void *buf, uint32_t len, struct ibv_mr *remote, uint64_t add, uint64_t swap)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (op == IBV_WR_SEND_WITH_IMM)
		wr.imm_data = htonl(0x600dcafe);
	if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = (uintptr_t)remote->addr;
		wr.wr.rdma.rkey = remote->rkey;
	}
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = (uintptr_t)remote->addr;
		wr.wr.atomic.rkey = remote->rkey;
		wr.wr.atomic.compare_add = add;
		wr.wr.atomic.swap = swap;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static inline int filled(const unsigned char *p, size_t n, unsigned char c)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

#endif
