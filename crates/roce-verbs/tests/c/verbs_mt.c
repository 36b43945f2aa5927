/*
 * verbs_mt: several threads post to several RC QPs at once and every byte and every completion
 * is checked. Plain libibverbs (build: cc -O2 -pthread verbs_mt.c -libverbs); run it on roce
 * with LD_PRELOAD=libroce_verbs.so, or on any RoCE device.
 *
 *   server:  verbs_mt [-p PORT] [-g GIDX] [-t THREADS] [-q QPS] [-n MSGS] [-s SIZE]
 *   client:  verbs_mt [same options] SERVER
 *
 * Each client thread t sends MSGS messages; message i goes to QP (t + i) % QPS, so every QP is
 * fed by several threads, and it is a chain of two work requests posted with one call: an
 * unsignaled RDMA WRITE of SIZE pattern bytes into the server's slot for (t, i), then a
 * signaled SEND with immediate data (the slot number) carrying a header and more pattern
 * bytes. Every 16th message the thread also RDMA READs 256 bytes of the QP's pattern region on
 * the server and checks them. Any thread polls any CQ: completions are tallied per work request
 * id, and at the end each signaled request must have completed exactly once, successfully, and
 * no unsignaled one at all. The server checks, for each receive, the SEND's bytes and the
 * WRITE's bytes in the slot the immediate names (the WRITE precedes the SEND on the QP), and
 * that every slot arrived exactly once. Both sides print one line and exit 0 only if all is well.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_QPS 16
#define SEND_BYTES 64
#define READ_BYTES 256
#define READ_REGION 4096
#define WINDOW 8
#define MAGIC 0x726f6365u

struct wire { /* per QP, exchanged over TCP */
	uint32_t qpn, psn, rkey_slots, rkey_read;
	uint64_t slots, read;
	uint8_t gid[16];
};

struct msg { /* the head of every SEND */
	uint32_t magic, thread, seq, qp;
};

static int threads = 4, nqps = 4, msgs = 200, size = 1024, gidx = 1, port = 18600;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq[MAX_QPS];
static struct ibv_qp *qp[MAX_QPS];
static struct wire mine[MAX_QPS], theirs[MAX_QPS];
static uint8_t *slots, *sendbuf, *readsrc, *readbuf;
static struct ibv_mr *slots_mr, *send_mr, *read_mr, *readbuf_mr;
static atomic_int *done_count;       /* client: completions per wr_id */
static atomic_int *outstanding;      /* client: per thread */
static atomic_int errors, unexpected;
static atomic_int *seen;             /* server: per slot */

static void die(const char *what)
{
	fprintf(stderr, "verbs_mt: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint8_t pattern(uint32_t a, uint32_t b, uint32_t i)
{
	return (uint8_t)(a * 131 + b * 29 + i * 7 + (i >> 8));
}

/* wr_id: kind (2 bits) | thread (14) | seq (32) */
enum { K_WRITE = 1, K_SEND = 2, K_READ = 3 };
static uint64_t wrid(int kind, int t, int i) { return ((uint64_t)kind << 62) | ((uint64_t)t << 32) | (uint32_t)i; }
static size_t slot_of(int t, int i) { return (size_t)t * msgs + i; }

static void xfer(int fd, void *buf, size_t n, int out)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = out ? write(fd, (char *)buf + done, n - done) : read(fd, (char *)buf + done, n - done);
		if (r <= 0)
			die("TCP exchange");
		done += r;
	}
}

static int tcp(const char *server)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	if (server) {
		if (inet_pton(AF_INET, server, &a.sin_addr) != 1)
			die("server address");
		for (int tries = 0; connect(fd, (void *)&a, sizeof a); tries++) {
			if (tries > 200)
				die("connect");
			usleep(100000);
		}
		return fd;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (void *)&a, sizeof a) || listen(fd, 1))
		die("listen");
	int c = accept(fd, NULL, NULL);
	if (c < 0)
		die("accept");
	close(fd);
	return c;
}

static struct ibv_mr *reg(void *buf, size_t n, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, n, access);
	if (!mr)
		die("ibv_reg_mr");
	return mr;
}

static void setup(void)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n < 1)
		die("no RDMA device");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	size_t nslots = (size_t)threads * msgs;
	slots = calloc(nslots, size);
	sendbuf = calloc(nslots, SEND_BYTES);
	readsrc = calloc(nqps, READ_REGION);
	readbuf = calloc((size_t)threads, READ_BYTES);
	if (!slots || !sendbuf || !readsrc || !readbuf)
		die("calloc");
	for (int q = 0; q < nqps; q++)
		for (int i = 0; i < READ_REGION; i++)
			readsrc[q * READ_REGION + i] = pattern(1000 + q, 7, i);
	slots_mr = reg(slots, nslots * size, rw);
	send_mr = reg(sendbuf, nslots * SEND_BYTES, rw);
	read_mr = reg(readsrc, (size_t)nqps * READ_REGION, rw);
	readbuf_mr = reg(readbuf, (size_t)threads * READ_BYTES, rw);
	union ibv_gid gid;
	if (ibv_query_gid(ctx, 1, gidx, &gid))
		die("ibv_query_gid");
	for (int q = 0; q < nqps; q++) {
		cq[q] = ibv_create_cq(ctx, 4 * (int)nslots + 64, NULL, NULL, 0);
		if (!cq[q])
			die("ibv_create_cq");
		struct ibv_qp_init_attr init = {
			.send_cq = cq[q], .recv_cq = cq[q], .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = threads * (2 * WINDOW + 1) + 8,
				 .max_recv_wr = (uint32_t)nslots, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		qp[q] = ibv_create_qp(pd, &init);
		if (!qp[q])
			die("ibv_create_qp");
		mine[q] = (struct wire){
			.qpn = qp[q]->qp_num, .psn = (uint32_t)(lrand48() & 0xffffff),
			.rkey_slots = slots_mr->rkey, .rkey_read = read_mr->rkey,
			.slots = (uintptr_t)slots, .read = (uintptr_t)readsrc + (size_t)q * READ_REGION,
		};
		memcpy(mine[q].gid, gid.raw, 16);
	}
}

static void connect_qp(int q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	if (ibv_modify_qp(qp[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = theirs[q].qpn;
	a.rq_psn = theirs[q].psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = gidx;
	memcpy(a.ah_attr.grh.dgid.raw, theirs[q].gid, 16);
	if (ibv_modify_qp(qp[q], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = mine[q].psn;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp[q], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

/* Client: polls every CQ once, tallying what completed. */
static void poll_all(void)
{
	struct ibv_wc wc[16];
	for (int q = 0; q < nqps; q++) {
		int n = ibv_poll_cq(cq[q], 16, wc);
		for (int k = 0; k < n; k++) {
			int kind = (int)(wc[k].wr_id >> 62), t = (int)((wc[k].wr_id >> 32) & 0x3fff);
			uint32_t i = (uint32_t)wc[k].wr_id;
			if (wc[k].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "verbs_mt: completion %s for kind %d thread %d seq %u\n",
					ibv_wc_status_str(wc[k].status), kind, t, i);
				atomic_fetch_add(&errors, 1);
				continue;
			}
			if (kind == K_WRITE || t >= threads || i >= (uint32_t)msgs) {
				atomic_fetch_add(&unexpected, 1);
				continue;
			}
			atomic_fetch_add(&done_count[(kind - 2) * threads * msgs + slot_of(t, (int)i)], 1);
			if (kind == K_SEND)
				atomic_fetch_sub(&outstanding[t], 1);
		}
	}
}

static void *client_thread(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int i = 0; i < msgs; i++) {
		int q = (t + i) % nqps;
		size_t s = slot_of(t, i);
		while (atomic_load(&outstanding[t]) >= WINDOW)
			poll_all();
		for (int k = 0; k < size; k++)
			slots[s * size + k] = pattern(t, i, k);
		struct msg *m = (struct msg *)(sendbuf + s * SEND_BYTES);
		*m = (struct msg){ MAGIC, (uint32_t)t, (uint32_t)i, (uint32_t)q };
		for (int k = sizeof *m; k < SEND_BYTES; k++)
			sendbuf[s * SEND_BYTES + k] = pattern(i, t, k);
		struct ibv_sge wsge = { (uintptr_t)(slots + s * size), (uint32_t)size, slots_mr->lkey };
		struct ibv_sge ssge = { (uintptr_t)m, SEND_BYTES, send_mr->lkey };
		struct ibv_send_wr send = {
			.wr_id = wrid(K_SEND, t, i), .sg_list = &ssge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
			.imm_data = htonl((uint32_t)s),
		};
		struct ibv_send_wr write = {
			.wr_id = wrid(K_WRITE, t, i), .next = &send, .sg_list = &wsge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.wr.rdma = { theirs[q].slots + s * size, theirs[q].rkey_slots },
		}, *bad;
		atomic_fetch_add(&outstanding[t], 1);
		if (ibv_post_send(qp[q], &write, &bad))
			die("ibv_post_send");
		if (i % 16 == 15) {
			uint32_t off = (uint32_t)(i * 16) % (READ_REGION - READ_BYTES);
			uint8_t *dst = readbuf + (size_t)t * READ_BYTES;
			memset(dst, 0, READ_BYTES);
			struct ibv_sge rsge = { (uintptr_t)dst, READ_BYTES, readbuf_mr->lkey };
			struct ibv_send_wr rd = {
				.wr_id = wrid(K_READ, t, i), .sg_list = &rsge, .num_sge = 1,
				.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { theirs[q].read + off, theirs[q].rkey_read },
			};
			if (ibv_post_send(qp[q], &rd, &bad))
				die("ibv_post_send (READ)");
			while (atomic_load(&done_count[threads * msgs + s]) == 0 && !atomic_load(&errors))
				poll_all();
			for (int k = 0; k < READ_BYTES; k++)
				if (dst[k] != pattern(1000 + q, 7, off + k)) {
					fprintf(stderr, "verbs_mt: READ thread %d seq %d byte %d wrong\n", t, i, k);
					atomic_fetch_add(&errors, 1);
					break;
				}
		}
	}
	while (atomic_load(&outstanding[t]) > 0 && !atomic_load(&errors))
		poll_all();
	return NULL;
}

/* Server: one thread per QP checks what arrives on it. */
static atomic_int received;

static void *server_thread(void *arg)
{
	int q = (int)(intptr_t)arg, expect = 0;
	for (int t = 0; t < threads; t++)
		for (int i = 0; i < msgs; i++)
			expect += (t + i) % nqps == q;
	struct ibv_wc wc[16];
	for (int got = 0; got < expect && !atomic_load(&errors);) {
		int n = ibv_poll_cq(cq[q], 16, wc);
		for (int k = 0; k < n; k++, got++) {
			if (wc[k].status != IBV_WC_SUCCESS || wc[k].opcode != IBV_WC_RECV ||
			    !(wc[k].wc_flags & IBV_WC_WITH_IMM) || wc[k].byte_len != SEND_BYTES) {
				fprintf(stderr, "verbs_mt: QP %d: bad receive (%s, opcode %d, %u bytes)\n",
					q, ibv_wc_status_str(wc[k].status), wc[k].opcode, wc[k].byte_len);
				atomic_fetch_add(&errors, 1);
				continue;
			}
			uint32_t s = ntohl(wc[k].imm_data);
			uint8_t *buf = sendbuf + wc[k].wr_id * SEND_BYTES;
			struct msg *m = (struct msg *)buf;
			int bad = s >= (uint32_t)(threads * msgs) || m->magic != MAGIC ||
				  slot_of((int)m->thread, (int)m->seq) != s || m->qp != (uint32_t)q;
			for (int i = sizeof *m; !bad && i < SEND_BYTES; i++)
				bad = buf[i] != pattern(m->seq, m->thread, i);
			for (int i = 0; !bad && i < size; i++)
				bad = slots[(size_t)s * size + i] != pattern(m->thread, m->seq, i);
			if (bad || atomic_fetch_add(&seen[s], 1) != 0) {
				fprintf(stderr, "verbs_mt: QP %d: message in slot %u is wrong or repeated\n", q, s);
				atomic_fetch_add(&errors, 1);
			}
			atomic_fetch_add(&received, 1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "p:g:t:q:n:s:")) != -1) {
		int v = atoi(optarg);
		switch (c) {
		case 'p': port = v; break;
		case 'g': gidx = v; break;
		case 't': threads = v; break;
		case 'q': nqps = v; break;
		case 'n': msgs = v; break;
		case 's': size = v; break;
		default: fprintf(stderr, "usage: verbs_mt [-p port] [-g gid] [-t threads] [-q qps] [-n msgs] [-s size] [server]\n"); return 2;
		}
	}
	if (threads < 1 || threads > 1024 || nqps < 1 || nqps > MAX_QPS || msgs < 1 || size < 1)
		return fprintf(stderr, "verbs_mt: bad sizes\n"), 2;
	const char *server = optind < argc ? argv[optind] : NULL;
	srand48(getpid());
	setup(); /* the port exists before the TCP exchange waits */
	int fd = tcp(server);
	size_t nslots = (size_t)threads * msgs;
	xfer(fd, mine, sizeof(struct wire) * nqps, 1);
	xfer(fd, theirs, sizeof(struct wire) * nqps, 0);
	for (int q = 0; q < nqps; q++)
		connect_qp(q);
	if (!server) {
		seen = calloc(nslots, sizeof *seen);
		/* Every receive is posted before the client may send: no RNR waits. */
		for (int q = 0; q < nqps; q++)
			for (size_t s = 0; s < nslots; s++) {
				if ((int)((s / msgs + s % msgs) % nqps) != q)
					continue;
				struct ibv_sge sge = { (uintptr_t)(sendbuf + s * SEND_BYTES), SEND_BYTES, send_mr->lkey };
				struct ibv_recv_wr wr = { .wr_id = s, .sg_list = &sge, .num_sge = 1 }, *bad;
				if (ibv_post_recv(qp[q], &wr, &bad))
					die("ibv_post_recv");
			}
	}
	char go = 'g';
	xfer(fd, &go, 1, 1); /* both sides connected before any traffic */
	xfer(fd, &go, 1, 0);
	pthread_t th[1024];
	int n = server ? threads : nqps;
	if (server) {
		done_count = calloc(2 * nslots, sizeof *done_count);
		outstanding = calloc(threads, sizeof *outstanding);
	}
	for (int k = 0; k < n; k++)
		pthread_create(&th[k], NULL, server ? client_thread : server_thread, (void *)(intptr_t)k);
	for (int k = 0; k < n; k++)
		pthread_join(th[k], NULL);
	int remote_errors = 0, mine_errors;
	if (server) {
		for (int t = 0; t < threads; t++)
			for (int i = 0; i < msgs; i++) {
				size_t s = slot_of(t, i);
				int sends = atomic_load(&done_count[s]), reads = atomic_load(&done_count[nslots + s]);
				if (sends != 1 || reads != (i % 16 == 15)) {
					fprintf(stderr, "verbs_mt: thread %d seq %d: %d send and %d READ completions\n",
						t, i, sends, reads);
					atomic_fetch_add(&errors, 1);
				}
			}
		if (atomic_load(&unexpected)) {
			fprintf(stderr, "verbs_mt: %d unexpected completions\n", atomic_load(&unexpected));
			atomic_fetch_add(&errors, 1);
		}
	} else {
		for (size_t s = 0; s < nslots; s++)
			if (atomic_load(&seen[s]) != 1)
				atomic_fetch_add(&errors, 1);
	}
	mine_errors = atomic_load(&errors);
	xfer(fd, &mine_errors, sizeof mine_errors, 1);
	xfer(fd, &remote_errors, sizeof remote_errors, 0);
	printf("verbs_mt: %s: %d threads, %d QPs, %d messages of %d bytes (+%d READs): "
	       "%d errors here, %d on the peer\n",
	       server ? "client" : "server", threads, nqps, threads * msgs, size,
	       threads * (msgs / 16), mine_errors, remote_errors);
	for (int q = 0; q < nqps; q++)
		if (ibv_destroy_qp(qp[q]) || ibv_destroy_cq(cq[q]))
			die("destroy");
	ibv_dereg_mr(slots_mr);
	ibv_dereg_mr(send_mr);
	ibv_dereg_mr(read_mr);
	ibv_dereg_mr(readbuf_mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return mine_errors || remote_errors;
}
