/*
 * verbs_self: two RC QPs of one process on one device, connected to each other at the device's
 * own GID (as test suites and single-node jobs do; Soft-RoCE loops such traffic back). For GID
 * index 1 (IPv4-mapped) and 0 (link-local IPv6): SEND with immediate, RDMA WRITE, RDMA READ,
 * FETCH_ADD and CMP_SWAP, every byte and every work completion field checked; then the same
 * through an extended CQ (ibv_create_cq_ex, ibv_start_poll, ibv_wc_read_*). One line per
 * check; exit 0 only if every check holds. Build: cc verbs_self.c -libverbs.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs_pair.h"

#define LEN 8192

static void pair(struct ibv_context *ctx, struct ibv_pd *pd, int gid_index)
{
	char what[160];
#define CHECK(cond, ...) do { snprintf(what, sizeof what, __VA_ARGS__); check(what, cond); } while (0)
	union ibv_gid gid;
	CHECK(ibv_query_gid(ctx, 1, gid_index, &gid) == 0, "gid %d: ibv_query_gid", gid_index);
	struct ibv_cq *cq_a = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *cq_b = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 8,
		.max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	init.send_cq = init.recv_cq = cq_a;
	struct ibv_qp *a = ibv_create_qp(pd, &init);
	init.send_cq = init.recv_cq = cq_b;
	struct ibv_qp *b = ibv_create_qp(pd, &init);
	CHECK(cq_a && cq_b && a && b, "gid %d: two CQs and two QPs", gid_index);
	if (!cq_a || !cq_b || !a || !b)
		return;
	CHECK(to_rts(a, b->qp_num, gid, gid_index) == 0 && to_rts(b, a->qp_num, gid, gid_index) == 0,
	      "gid %d: each QP to RTS with the other at our own GID", gid_index);

	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		 IBV_ACCESS_REMOTE_ATOMIC;
	unsigned char *src = malloc(LEN), *dst = calloc(1, LEN);
	uint64_t *target = calloc(1, 8), *orig = calloc(1, 8);
	struct ibv_mr *src_mr = ibv_reg_mr(pd, src, LEN, rw), *dst_mr = ibv_reg_mr(pd, dst, LEN, rw);
	struct ibv_mr *t_mr = ibv_reg_mr(pd, target, 8, rw), *o_mr = ibv_reg_mr(pd, orig, 8, rw);
	CHECK(src_mr && dst_mr && t_mr && o_mr, "gid %d: four regions", gid_index);
	if (!src_mr || !dst_mr || !t_mr || !o_mr)
		return;

	/* SEND with immediate: B's receive gets every byte and the immediate. */
	memset(src, 0x11, LEN);
	struct ibv_sge rsge = { .addr = (uintptr_t)dst, .length = LEN, .lkey = dst_mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 100, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	CHECK(ibv_post_recv(b, &rwr, &rbad) == 0, "gid %d: post_recv", gid_index);
	CHECK(post(a, IBV_WR_SEND_WITH_IMM, 1, src_mr, src, LEN, NULL, 0, 0) == 0, "gid %d: post SEND", gid_index);
	struct ibv_wc wc = poll_one(cq_a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 1 &&
	      wc.qp_num == a->qp_num, "gid %d: SEND completes as SEND", gid_index);
	wc = poll_one(cq_b);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 100 &&
	      wc.byte_len == LEN && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      ntohl(wc.imm_data) == 0x600dcafe && wc.qp_num == b->qp_num && wc.src_qp == a->qp_num,
	      "gid %d: RECV with byte_len, immediate, qp_num and src_qp", gid_index);
	CHECK(filled(dst, LEN, 0x11), "gid %d: the SEND's bytes arrived", gid_index);

	/* RDMA WRITE into B's region. */
	memset(src, 0x22, LEN);
	CHECK(post(a, IBV_WR_RDMA_WRITE, 2, src_mr, src, LEN, dst_mr, 0, 0) == 0, "gid %d: post WRITE", gid_index);
	wc = poll_one(cq_a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 2,
	      "gid %d: WRITE completes as RDMA_WRITE", gid_index);
	CHECK(filled(dst, LEN, 0x22), "gid %d: the WRITE's bytes arrived", gid_index);

	/* RDMA READ back from B's region into A's. */
	memset(dst, 0x33, LEN);
	memset(src, 0, LEN);
	CHECK(post(a, IBV_WR_RDMA_READ, 3, src_mr, src, LEN, dst_mr, 0, 0) == 0, "gid %d: post READ", gid_index);
	wc = poll_one(cq_a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.wr_id == 3 &&
	      wc.byte_len == LEN, "gid %d: READ completes as RDMA_READ with byte_len", gid_index);
	CHECK(filled(src, LEN, 0x33), "gid %d: the READ's bytes arrived", gid_index);

	/* FETCH_ADD then CMP_SWAP on B's word. */
	*target = 40;
	CHECK(post(a, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, o_mr, orig, 8, t_mr, 2, 0) == 0, "gid %d: post FETCH_ADD", gid_index);
	wc = poll_one(cq_a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD && wc.wr_id == 4 &&
	      wc.byte_len == 8 && *orig == 40 && *target == 42,
	      "gid %d: FETCH_ADD completes as FETCH_ADD: original 40, now 42", gid_index);
	CHECK(post(a, IBV_WR_ATOMIC_CMP_AND_SWP, 5, o_mr, orig, 8, t_mr, 42, 7) == 0, "gid %d: post CMP_SWAP", gid_index);
	wc = poll_one(cq_a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP && wc.wr_id == 5 &&
	      wc.byte_len == 8 && *orig == 42 && *target == 7,
	      "gid %d: CMP_SWAP completes as COMP_SWAP: original 42, now 7", gid_index);

	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	ibv_dereg_mr(t_mr);
	ibv_dereg_mr(o_mr);
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0 && ibv_destroy_cq(cq_a) == 0 &&
	      ibv_destroy_cq(cq_b) == 0, "gid %d: QPs and CQs destroyed", gid_index);
	free(src);
	free(dst);
	free(target);
	free(orig);
#undef CHECK
}

/*
 * An extended CQ (ibv_create_cq_ex with the standard fields) under QP A: a SEND with immediate
 * from B arrives on it, then A's WRITE and FETCH_ADD complete on it; read with ibv_start_poll /
 * ibv_next_poll / ibv_wc_read_* and checked field by field; ibv_poll_cq reads the same CQ.
 */
static void extended(struct ibv_context *ctx, struct ibv_pd *pd)
{
	union ibv_gid gid;
	check("cq_ex: ibv_query_gid", ibv_query_gid(ctx, 1, 1, &gid) == 0);
	struct ibv_cq_init_attr_ex cx = { .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_cq_ex *ex = ibv_create_cq_ex(ctx, &cx);
	struct ibv_cq *cq_b = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	check("cq_ex: ibv_create_cq_ex with the standard fields", ex != NULL && cq_b != NULL);
	if (!ex || !cq_b)
		return;
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 8,
		.max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	init.send_cq = init.recv_cq = ibv_cq_ex_to_cq(ex);
	struct ibv_qp *a = ibv_create_qp(pd, &init);
	init.send_cq = init.recv_cq = cq_b;
	struct ibv_qp *b = ibv_create_qp(pd, &init);
	check("cq_ex: QP A on the extended CQ, B on a plain one, both to RTS", a && b &&
	      to_rts(a, b->qp_num, gid, 1) == 0 && to_rts(b, a->qp_num, gid, 1) == 0);
	if (!a || !b)
		return;
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		 IBV_ACCESS_REMOTE_ATOMIC;
	unsigned char *buf = calloc(1, 4096), *dst = calloc(1, 4096);
	uint64_t *word = calloc(1, 8), *orig = calloc(1, 8);
	struct ibv_mr *buf_mr = ibv_reg_mr(pd, buf, 4096, rw), *dst_mr = ibv_reg_mr(pd, dst, 4096, rw);
	struct ibv_mr *w_mr = ibv_reg_mr(pd, word, 8, rw), *o_mr = ibv_reg_mr(pd, orig, 8, rw);
	struct ibv_sge rsge = { .addr = (uintptr_t)buf, .length = 4096, .lkey = buf_mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 50, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	memset(dst, 0x77, 1000);
	*word = 5;
	int posted = ibv_post_recv(a, &rwr, &rbad) == 0 &&
		     post(b, IBV_WR_SEND_WITH_IMM, 60, dst_mr, dst, 1000, NULL, 0, 0) == 0;
	struct ibv_wc wc = poll_one(cq_b);
	check("cq_ex: B's SEND with immediate completes", posted && wc.status == IBV_WC_SUCCESS);

	struct ibv_poll_cq_attr pa = { 0 };
	int r = ENOENT;
	for (time_t end = time(NULL) + 10; r == ENOENT && time(NULL) < end;)
		r = ibv_start_poll(ex, &pa);
	check("cq_ex: ibv_start_poll finds the receive", r == 0);
	if (r != 0)
		return;
	check("cq_ex: the receive's status, wr_id, opcode, byte_len, immediate, flags, qp_num, src_qp",
	      ex->status == IBV_WC_SUCCESS && ex->wr_id == 50 &&
	      ibv_wc_read_opcode(ex) == IBV_WC_RECV && ibv_wc_read_byte_len(ex) == 1000 &&
	      ntohl(ibv_wc_read_imm_data(ex)) == 0x600dcafe &&
	      (ibv_wc_read_wc_flags(ex) & IBV_WC_WITH_IMM) && ibv_wc_read_qp_num(ex) == a->qp_num &&
	      ibv_wc_read_src_qp(ex) == b->qp_num && ibv_wc_read_vendor_err(ex) == 0);
	check("cq_ex: the bytes arrived", filled(buf, 1000, 0x77));
	check("cq_ex: ibv_next_poll then finds nothing", ibv_next_poll(ex) == ENOENT);
	ibv_end_poll(ex);

	int sent = post(a, IBV_WR_RDMA_WRITE, 70, buf_mr, buf, 1000, dst_mr, 0, 0) == 0 &&
		   post(a, IBV_WR_ATOMIC_FETCH_AND_ADD, 71, o_mr, orig, 8, w_mr, 3, 0) == 0;
	check("cq_ex: A posts a WRITE and a FETCH_ADD", sent);
	r = ENOENT;
	for (time_t end = time(NULL) + 10; r == ENOENT && time(NULL) < end;)
		r = ibv_start_poll(ex, &pa);
	int first = r == 0 && ex->wr_id == 70 && ex->status == IBV_WC_SUCCESS &&
		    ibv_wc_read_opcode(ex) == IBV_WC_RDMA_WRITE && ibv_wc_read_qp_num(ex) == a->qp_num;
	r = r == 0 ? ENOENT : r;
	for (time_t end = time(NULL) + 10; r == ENOENT && time(NULL) < end;)
		r = ibv_next_poll(ex);
	int second = r == 0 && ex->wr_id == 71 && ex->status == IBV_WC_SUCCESS &&
		     ibv_wc_read_opcode(ex) == IBV_WC_FETCH_ADD && ibv_wc_read_byte_len(ex) == 8;
	ibv_end_poll(ex);
	check("cq_ex: the WRITE completes as RDMA_WRITE", first);
	check("cq_ex: then the FETCH_ADD as FETCH_ADD", second && *orig == 5 && *word == 8);

	/* The same CQ through ibv_poll_cq. */
	post(a, IBV_WR_RDMA_WRITE, 72, buf_mr, buf, 8, dst_mr, 0, 0);
	wc = poll_one(ibv_cq_ex_to_cq(ex));
	check("cq_ex: ibv_poll_cq reads the extended CQ", wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 72 && wc.opcode == IBV_WC_RDMA_WRITE);
	ibv_dereg_mr(buf_mr);
	ibv_dereg_mr(dst_mr);
	ibv_dereg_mr(w_mr);
	ibv_dereg_mr(o_mr);
	check("cq_ex: QPs destroyed, then the extended CQ by ibv_destroy_cq",
	      ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0 &&
	      ibv_destroy_cq(ibv_cq_ex_to_cq(ex)) == 0 && ibv_destroy_cq(cq_b) == 0);
	free(buf);
	free(dst);
	free(word);
	free(orig);
}

int main(void)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = list && n == 1 ? ibv_open_device(list[0]) : NULL;
	ibv_free_device_list(list);
	check("ibv_open_device", ctx != NULL);
	if (!ctx)
		return 1;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	check("ibv_alloc_pd", pd != NULL);
	if (!pd)
		return 1;
	pair(ctx, pd, 1);
	pair(ctx, pd, 0);
	extended(ctx, pd);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("verbs_self: %d failed\n", failures);
	return failures != 0;
}
