// SPDX-License-Identifier: MIT
#include "frames.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static uint16_t ip_csum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void frame_udp_bare(struct frame *f, const struct udp_headers *h,
		    const uint8_t *payload, size_t plen)
{
	size_t l3 = ETH_LEN, hl, udp_len = 8 + plen;
	uint8_t *b = f->b;

	memset(b, 0, ETH_LEN);
	b[6] = 0x02;
	if (h->family == AF_INET) {
		hl = 20 + 4 * (size_t)h->opt_words;
		put16(b + 12, 0x0800);
		memset(b + l3, 0, hl);
		b[l3] = 0x40 | (uint8_t)(hl / 4);
		put16(b + l3 + 2, (uint16_t)(hl + udp_len));
		put16(b + l3 + 6, h->frag_off);
		b[l3 + 8] = 64;
		b[l3 + 9] = IPPROTO_UDP;
		memcpy(b + l3 + 12, h->saddr, 4);
		memcpy(b + l3 + 16, h->daddr, 4);
		memset(b + l3 + 20, 1, hl - 20); /* NOP options */
	} else {
		hl = 40;
		put16(b + 12, 0x86dd);
		memset(b + l3, 0, hl);
		b[l3] = 0x60;
		put16(b + l3 + 4, (uint16_t)udp_len);
		b[l3 + 6] = IPPROTO_UDP;
		b[l3 + 7] = 64;
		memcpy(b + l3 + 8, h->saddr, 16);
		memcpy(b + l3 + 24, h->daddr, 16);
	}
	f->l4 = l3 + hl;
	put16(b + f->l4, h->sport);
	put16(b + f->l4 + 2, h->dport);
	put16(b + f->l4 + 4, (uint16_t)udp_len);
	put16(b + f->l4 + 6, 0);
	if (plen)
		memcpy(b + f->l4 + 8, payload, plen);
	f->len = f->l4 + udp_len;
}

void frame_udp(struct frame *f, int family, const char *dst, uint16_t dport,
	       int opt_words, const uint8_t *payload, size_t plen)
{
	uint8_t saddr[16] = {0}, daddr[16] = {0};
	struct udp_headers h = {
		.family = family,
		.saddr = saddr,
		.daddr = daddr,
		.sport = 50000,
		.dport = dport,
		.opt_words = (unsigned int)opt_words,
		.frag_off = 0x4000}; /* DF: set, still no fragment */
	uint8_t *ip = f->b + ETH_LEN;

	inet_pton(family, family == AF_INET ? "198.18.1.1" : "2001:db8:1::1",
		  saddr);
	inet_pton(family, dst, daddr);
	memset(f, 0, sizeof(*f));
	frame_udp_bare(f, &h, payload, plen);
	f->b[11] = 0x01;
	if (family != AF_INET)
		return;
	put16(ip + 4, 0x1234);
	if (opt_words) {
		ip[20] = 0x94;
		ip[21] = 4;
		ip[22] = 0;
		ip[23] = 0;
	}
	put16(ip + 10, ip_csum(ip, f->l4 - ETH_LEN));
}

size_t quic_long_start(uint8_t *out, uint8_t first, uint32_t version,
		       const uint8_t *dcid, size_t dcil)
{
	out[0] = first;
	put32(out + 1, version);
	out[5] = (uint8_t)dcil;
	memcpy(out + 6, dcid, dcil);
	return 6 + dcil;
}

size_t quic_short(uint8_t *out, const uint8_t *dcid, size_t n)
{
	out[0] = 0x41; /* fixed bit, 2-byte packet number */
	memcpy(out + 1, dcid, n);
	memset(out + 1 + n, 0xab, 32);
	return 1 + n + 32;
}

size_t quic_long(uint8_t *out, uint32_t version, int type, const uint8_t *dcid,
		 size_t dcil)
{
	size_t o = quic_long_start(out, 0xc0 | (uint8_t)(type << 4) | 0x01,
				   version, dcid, dcil);

	out[o++] = 8; /* SCID */
	memset(out + o, 0x5c, 8);
	o += 8;
	out[o++] = 0x40; /* Length, 2-byte varint */
	out[o++] = 40;
	memset(out + o, 0xcd, 40);
	return o + 40;
}
