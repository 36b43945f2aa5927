/*
 * verbs_misuse: local misuse of the verbs API fails the way libibverbs over a kernel device
 * reports it, without crashing or hanging. One line per check; exit 0 only if every check
 * holds. Build: cc verbs_misuse.c -libverbs.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void check(const char *what, int ok)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
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
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	check("ibv_alloc_pd and ibv_create_cq", pd && cq);
	if (!pd || !cq)
		return 1;
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	/* CQ sizes and completion vectors the device does not have, as the kernel refuses them. */
	struct ibv_device_attr dev;
	check("ibv_query_device", ibv_query_device(ctx, &dev) == 0);
	errno = 0;
	check("ibv_create_cq with more than max_cqe entries returns NULL with EINVAL",
	      ibv_create_cq(ctx, dev.max_cqe + 1, NULL, NULL, 0) == NULL && errno == EINVAL);
	errno = 0;
	check("ibv_create_cq with 0 entries returns NULL with EINVAL",
	      ibv_create_cq(ctx, 0, NULL, NULL, 0) == NULL && errno == EINVAL);
	errno = 0;
	check("ibv_create_cq on a vector past num_comp_vectors returns NULL with EINVAL",
	      ibv_create_cq(ctx, 16, NULL, NULL, ctx->num_comp_vectors) == NULL && errno == EINVAL);
	errno = 0;
	check("ibv_create_cq on a negative vector returns NULL with EINVAL",
	      ibv_create_cq(ctx, 16, NULL, NULL, -1) == NULL && errno == EINVAL);

	/* 2^44 bytes: more than the machine has; the process must survive it. */
	char small[64];
	errno = 0;
	struct ibv_mr *huge = ibv_reg_mr(pd, small, (size_t)1 << 44, rw);
	check("ibv_reg_mr of 2^44 bytes returns NULL with ENOMEM", huge == NULL && errno == ENOMEM);

	/* Memory that is not mapped: a page mapped, then unmapped. */
	long page = sysconf(_SC_PAGESIZE);
	void *gone = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	check("mmap", gone != MAP_FAILED);
	munmap(gone, 4 * page);
	errno = 0;
	check("ibv_reg_mr of unmapped memory returns NULL with EFAULT",
	      ibv_reg_mr(pd, gone, 4 * page, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EFAULT);

	/* Half mapped: the range runs past the end of a mapping. */
	char *half = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(half + page, page);
	errno = 0;
	check("ibv_reg_mr of a range that leaves its mapping returns NULL with EFAULT",
	      ibv_reg_mr(pd, half, 2 * page, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EFAULT);

	/* Read-only memory: registrable for reading, not for writing (the kernel pins it so). */
	void *ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *ro_mr = ibv_reg_mr(pd, ro, page, IBV_ACCESS_REMOTE_READ);
	check("read-only memory registers for remote reads", ro_mr != NULL);
	errno = 0;
	check("read-only memory does not register for local writes",
	      ibv_reg_mr(pd, ro, page, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EFAULT);
	if (ro_mr)
		ibv_dereg_mr(ro_mr);

	/* The mapped half still registers. */
	struct ibv_mr *ok = ibv_reg_mr(pd, half, page, rw);
	check("ibv_reg_mr of mapped memory succeeds", ok != NULL);
	if (ok)
		ibv_dereg_mr(ok);

	/* A CQ a QP uses cannot be destroyed. */
	struct ibv_qp_init_attr ra = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &ra);
	check("an RC QP is created", qp != NULL);
	if (!qp)
		return 1;
	check("ibv_destroy_cq of a CQ a QP uses returns EBUSY", ibv_destroy_cq(cq) == EBUSY);

	/* After fork(), the child's verbs fail at once (the device belongs to the parent). */
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		alarm(10); /* a hang is a failure, not a stuck test */
		errno = 0;
		struct ibv_pd *p = ibv_alloc_pd(ctx);
		int e = errno;
		_exit(p == NULL && e != 0 ? 0 : 1);
	}
	int status = 0;
	waitpid(child, &status, 0);
	check("ibv_alloc_pd in a forked child fails at once with an errno",
	      WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The parent's device still works. */
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	check("the parent still allocates after the fork", pd2 != NULL);

	check("ibv_destroy_qp", !ibv_destroy_qp(qp));
	check("ibv_destroy_cq once no QP uses it", !ibv_destroy_cq(cq));
	check("ibv_dealloc_pd", !ibv_dealloc_pd(pd) && (!pd2 || !ibv_dealloc_pd(pd2)));
	check("ibv_close_device", !ibv_close_device(ctx));
	printf("verbs_misuse: %d failed\n", failures);
	return failures != 0;
}
