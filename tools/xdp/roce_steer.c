// SPDX-License-Identifier: MIT OR Apache-2.0
//
// An XDP program for `roce --port af_xdp:IF[,QUEUE]` that hands the AF_XDP socket only RoCEv2
// (IPv4 UDP to port 4791, unfragmented) and leaves every other frame to the kernel, so the
// interface keeps its kernel traffic (ARP, TCP, ...) while roce owns RoCE. DPDK's net_af_xdp
// loads it with `xdp_prog=PATH` and puts its socket into `xsks_map` at the queue's index.
// Build: tools/xdp/build.sh (needs clang with the BPF target and libbpf's headers).

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCE_V2_PORT 4791

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int roce_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	struct udphdr *udp;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	/* Fragments (more-fragments flag or an offset) stay with the kernel, which reassembles. */
	if (ip->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(ROCE_V2_PORT))
		return XDP_PASS;
	/* No socket on this queue: the kernel gets the frame rather than nobody. */
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

/* MIT, declared with a GPL-compatible name the kernel knows. */
char _license[] SEC("license") = "Dual MIT/GPL";
