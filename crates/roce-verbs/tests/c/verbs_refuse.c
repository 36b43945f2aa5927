/*
 * verbs_refuse: what roce does not provide fails the way libibverbs reports it (NULL or an
 * error code, errno EOPNOTSUPP), and misuse fails with EINVAL, without crashing. One line per
 * check; exit 0 only if every check holds. Build: cc verbs_refuse.c -libverbs.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void check(const char *what, int ok)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

static void refused(const char *what, void *p)
{
	int e = errno;
	char line[160];
	snprintf(line, sizeof line, "%s is refused with EOPNOTSUPP (errno %d)", what, e);
	check(line, p == NULL && e == EOPNOTSUPP);
}

int main(void)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	check("one device named roce0", list && n == 1 && !strcmp(ibv_get_device_name(list[0]), "roce0"));
	struct ibv_context *ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	check("ibv_open_device", ctx != NULL);
	if (!ctx)
		return 1;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	check("ibv_alloc_pd and ibv_create_cq", pd && cq);
	if (!pd || !cq)
		return 1;

	enum ibv_qp_type types[] = { IBV_QPT_UD, IBV_QPT_UC, IBV_QPT_XRC_SEND, IBV_QPT_RAW_PACKET };
	const char *names[] = { "a UD QP", "a UC QP", "an XRC QP", "a raw packet QP" };
	for (int i = 0; i < 4; i++) {
		struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = types[i],
			.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
		errno = 0;
		refused(names[i], ibv_create_qp(pd, &a));
	}
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	errno = 0;
	refused("ibv_create_srq", ibv_create_srq(pd, &sa));
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1 };
	errno = 0;
	refused("ibv_create_ah", ibv_create_ah(pd, &ah));
	errno = 0;
	refused("ibv_alloc_mw (through the ops table)", ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	struct ibv_cq_init_attr_ex cx = { .cqe = 4,
		.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
	errno = 0;
	refused("ibv_create_cq_ex with completion timestamps", ibv_create_cq_ex(ctx, &cx));
	char buf[4096];
	errno = 0;
	refused("on-demand paging", ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND));

	struct ibv_qp_init_attr ra = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &ra);
	check("an RC QP is created", qp != NULL);
	if (!qp)
		return 1;
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
	check("ibv_reg_mr", mr != NULL);
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr ? mr->lkey : 0 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad = NULL;
	check("ibv_post_send in RESET fails with EINVAL and names the request",
	      ibv_post_send(qp, &wr, &bad) == EINVAL && bad == &wr);
	struct ibv_send_wr mw = { .wr_id = 2, .opcode = IBV_WR_BIND_MW };
	bad = NULL;
	check("a memory-window work request fails with EOPNOTSUPP",
	      ibv_post_send(qp, &mw, &bad) == EOPNOTSUPP && bad == &mw);
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	check("RESET -> INIT", !ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	struct ibv_qp_attr rtr = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = 17,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12, .ah_attr = { .is_global = 0, .port_num = 1 } };
	check("INIT -> RTR without a GRH fails with EINVAL",
	      ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == EINVAL);
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS };
	check("INIT -> RTS fails with EINVAL", ibv_modify_qp(qp, &rts, IBV_QP_STATE) == EINVAL);
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;
	check("ibv_query_qp reports INIT", !ibv_query_qp(qp, &q, IBV_QP_STATE, &qi) && q.qp_state == IBV_QPS_INIT &&
	      qi.qp_type == IBV_QPT_RC && qi.cap.max_send_wr == 4);
	check("ibv_destroy_qp", !ibv_destroy_qp(qp));
	check("ibv_dereg_mr", mr && !ibv_dereg_mr(mr));
	check("ibv_destroy_cq", !ibv_destroy_cq(cq));
	check("ibv_dealloc_pd", !ibv_dealloc_pd(pd));
	check("ibv_close_device", !ibv_close_device(ctx));
	printf("verbs_refuse: %d failed\n", failures);
	return failures != 0;
}
