/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: a packet's TCP header, where its payload begins
 * (IPv4, or IPv6 without extension headers).
 */
#ifndef EBEE_FRAME_PACKET_BPF_H
#define EBEE_FRAME_PACKET_BPF_H

#define ETH_P_IP_   0x0800
#define ETH_P_IPV6_ 0x86DD

/* The TCP header of an IPv4 or IPv6 packet: 0 with *off at the payload, or
 * -1 (not TCP, or IPv6 extension headers, not followed). */
static __always_inline int frame_tcp(struct __sk_buff *skb, struct tcphdr *th, __u32 *off)
{
	__u8 ip[20];

	if (skb->protocol == bpf_htons(ETH_P_IP_)) {
		if (bpf_skb_load_bytes(skb, 0, ip, sizeof(ip)) || ip[9] != IPPROTO_TCP_)
			return -1;
		*off = (ip[0] & 0xf) * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6_)) {
		if (bpf_skb_load_bytes(skb, 0, ip, 8) || ip[6] != IPPROTO_TCP_)
			return -1;
		*off = 40;
	} else {
		return -1;
	}
	if (bpf_skb_load_bytes(skb, *off, th, sizeof(*th)))
		return -1;
	*off += th->doff * 4;
	return 0;
}

#endif /* EBEE_FRAME_PACKET_BPF_H */
