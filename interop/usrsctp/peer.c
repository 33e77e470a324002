/*
 * usrsctp-peer: an independent SCTP peer for speedy's interop tests.
 *
 * Built on usrsctp (the user-space SCTP stack from FreeBSD, as used by
 * browsers for WebRTC data channels), talking SCTP over UDP (RFC 6951): every
 * SCTP packet is the payload of one UDP datagram, no extra header.
 *
 *   usrsctp-peer server <udp_port>
 *   usrsctp-peer client <udp_port_local> <remote_ip> <remote_udp_port> <n_streams> <msg_size>
 *   usrsctp-peer --help
 *
 * See usage() below and interop/usrsctp/README.md.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Declares usrsctp_sysctl_set_sctp_debug_on (Debian's libusrsctp exports it). */
#ifndef SCTP_DEBUG
#define SCTP_DEBUG 1
#endif
#include <usrsctp.h>

#define SCTP_PORT 5000            /* SCTP port on both sides (sctp-proto's default) */
#define PPID_BINARY 53            /* WebRTC "binary" PPID, what speedy puts on DATA */
#define N_STREAMS_OFFERED 256     /* inbound and outbound streams we ask for */
#define READ_CHUNK (64 * 1024)    /* bytes per usrsctp_recvv call */
#define MAX_MESSAGE (64u << 20)   /* refuse to accumulate more than this per message */
#define DEFAULT_TIMEOUT 20        /* seconds, client only */

static const char *prog = "usrsctp-peer";

static void usage(FILE *out)
{
	fprintf(out,
	    "usage:\n"
	    "  %s server <udp_port>\n"
	    "      Listen for UDP-encapsulated SCTP (RFC 6951) on UDP <udp_port>, SCTP port %d.\n"
	    "      Accepts associations in a loop (one thread each), offers %d streams in and\n"
	    "      out, and echoes every complete message back on the same stream with the same\n"
	    "      PPID (and the same unordered flag). Prints 'listening udp=<port>' when ready;\n"
	    "      one line per association and errors go to stderr. Runs until killed.\n"
	    "  %s client <udp_port_local> <remote_ip> <remote_udp_port> <n_streams> <msg_size>\n"
	    "      usrsctp on local UDP <udp_port_local> (SCTP port %d), associates with\n"
	    "      <remote_ip> SCTP port %d over UDP to <remote_udp_port>, sends one message of\n"
	    "      <msg_size> bytes on each of streams 1..<n_streams> (byte i on stream s is\n"
	    "      (i*31 + s) & 0xff, PPID %d) and expects each echoed back byte-identical on\n"
	    "      the same stream. Prints 'ok <n_streams> messages' and exits 0, or prints\n"
	    "      'error: ...' and exits 1. Whole run bounded by a timeout.\n"
	    "  %s --help\n"
	    "\n"
	    "environment:\n"
	    "  USRSCTP_PEER_TIMEOUT=S   client timeout in seconds (default %d)\n"
	    "  USRSCTP_PEER_LOCAL_SCTP_PORT=P  client's own SCTP port (default %d; 0 = any).\n"
	    "                           Associations are told apart by IP and SCTP ports, not\n"
	    "                           UDP ports: concurrent clients from one IP need distinct P\n"
	    "  USRSCTP_PEER_EARLY_DATA=1  client: connect non-blocking and queue the first\n"
	    "                           message before the handshake finishes, so usrsctp\n"
	    "                           bundles DATA with its COOKIE ECHO\n"
	    "  USRSCTP_PEER_DEBUG=1     turn on usrsctp's own debug output (stderr)\n"
	    "  USRSCTP_PEER_SPDY_FRAMES=1  client: each message is one SPDY DATA frame (stream\n"
	    "                           2*s, then the pattern), echoes matched by that id on\n"
	    "                           any SCTP stream (speedy's mapping, docs/sctp.md)\n",
	    prog, SCTP_PORT, N_STREAMS_OFFERED, prog, SCTP_PORT, SCTP_PORT, PPID_BINARY, prog,
	    DEFAULT_TIMEOUT, SCTP_PORT);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	fflush(stdout);
	_exit(1);
}

static void logmsg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static void debug_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static int parse_port(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 1 || v > 65535)
		die("bad %s '%s' (want 1..65535)", what, s);
	return (int)v;
}

static long parse_long(const char *s, const char *what, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		die("bad %s '%s' (want %ld..%ld)", what, s, lo, hi);
	return v;
}

/* Start usrsctp with its UDP encapsulation socket(s) on udp_port. */
static void stack_init(int udp_port)
{
	const char *dbg = getenv("USRSCTP_PEER_DEBUG");
	int debug = dbg != NULL && dbg[0] != '\0' && strcmp(dbg, "0") != 0;

	usrsctp_init((uint16_t)udp_port, NULL, debug ? debug_printf : NULL);
#ifdef SCTP_DEBUG
	if (debug)
		usrsctp_sysctl_set_sctp_debug_on(SCTP_DEBUG_ALL);
#endif
	/*
	 * Checksums: usrsctp always computes the CRC32c on UDP-encapsulated packets
	 * it sends, but by default (sctp_no_csum_on_loopback=1) it does not verify
	 * the CRC of received packets whose source and destination address are the
	 * same (127.0.0.1 -> 127.0.0.1). Turn that off so every received packet is
	 * checked, on loopback too.
	 */
	usrsctp_sysctl_set_sctp_no_csum_on_loopback(0);
	/*
	 * No ABORT in reply to packets for SCTP ports no socket of ours is bound to.
	 * Run as root, usrsctp_init also opens raw IPPROTO_SCTP sockets and so sees
	 * the host's native (kernel) SCTP traffic: stay out of other stacks' way.
	 */
	usrsctp_sysctl_set_sctp_blackhole(2);
	/* Defaults for associations that never see SCTP_INITMSG. */
	usrsctp_sysctl_set_sctp_nr_incoming_streams_default(N_STREAMS_OFFERED);
	usrsctp_sysctl_set_sctp_nr_outgoing_streams_default(N_STREAMS_OFFERED);
	/* ECN is not needed; keep the INIT simple. */
	usrsctp_sysctl_set_sctp_ecn_enable(0);
}

static void set_common_opts(struct socket *s, const char *who)
{
	const int on = 1;
	struct sctp_initmsg im;

	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof(on)) < 0)
		die("%s: setsockopt SCTP_RECVRCVINFO: %s", who, strerror(errno));
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof(on)) < 0)
		die("%s: setsockopt SCTP_NODELAY: %s", who, strerror(errno));
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_EXPLICIT_EOR, &on, sizeof(on)) < 0)
		die("%s: setsockopt SCTP_EXPLICIT_EOR: %s", who, strerror(errno));
	memset(&im, 0, sizeof(im));
	im.sinit_num_ostreams = N_STREAMS_OFFERED;
	im.sinit_max_instreams = N_STREAMS_OFFERED;
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_INITMSG, &im, sizeof(im)) < 0)
		die("%s: setsockopt SCTP_INITMSG: %s", who, strerror(errno));
}

static int get_status(struct socket *s, struct sctp_status *st)
{
	socklen_t len = sizeof(*st);

	memset(st, 0, sizeof(*st));
	return usrsctp_getsockopt(s, IPPROTO_SCTP, SCTP_STATUS, st, &len);
}

/* One message being reassembled from partial deliveries, per stream. */
struct msgbuf {
	unsigned char *data;
	size_t len;
	size_t cap;
	uint32_t ppid;
	uint16_t flags;
	int active;
};

static int msgbuf_append(struct msgbuf *m, const void *p, size_t n)
{
	if (m->len + n > MAX_MESSAGE) {
		errno = EMSGSIZE;
		return -1;
	}
	if (m->len + n > m->cap) {
		size_t cap = m->cap ? m->cap : READ_CHUNK;
		unsigned char *d;

		while (cap < m->len + n)
			cap *= 2;
		d = realloc(m->data, cap);
		if (d == NULL)
			return -1;
		m->data = d;
		m->cap = cap;
	}
	memcpy(m->data + m->len, p, n);
	m->len += n;
	return 0;
}

/*
 * Read from s until one whole message (MSG_EOR) is complete. Fragments are
 * accumulated per stream id in bufs[65536] (allocated by the caller), so this
 * works whatever the fragment interleave level. Returns the stream id of the
 * completed message, -1 on a clean end of association (peer closed), -2 on
 * error (errno set).
 */
static int recv_message(struct socket *s, struct msgbuf *bufs, unsigned char *chunk,
    int *cur_sid)
{
	for (;;) {
		struct sctp_rcvinfo rcv;
		socklen_t infolen = sizeof(rcv);
		unsigned int infotype = 0;
		int flags = 0;
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		ssize_t n;
		int sid;
		struct msgbuf *m;

		memset(&rcv, 0, sizeof(rcv));
		n = usrsctp_recvv(s, chunk, READ_CHUNK, (struct sockaddr *)&from, &fromlen,
		    &rcv, &infolen, &infotype, &flags);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -2;
		}
		if (n == 0 && !(flags & MSG_EOR) && !(flags & MSG_NOTIFICATION))
			return -1;
		if (flags & MSG_NOTIFICATION)
			continue; /* not subscribed to any; skip if one shows up */
		if (infotype == SCTP_RECVV_RCVINFO && infolen >= (socklen_t)sizeof(rcv)) {
			sid = rcv.rcv_sid;
		} else if (*cur_sid >= 0) {
			sid = *cur_sid; /* continuation without ancillary data */
		} else {
			errno = EPROTO;
			return -2;
		}
		m = &bufs[sid];
		if (!m->active) {
			m->active = 1;
			m->len = 0;
			m->ppid = rcv.rcv_ppid;   /* network byte order, as on the wire */
			m->flags = rcv.rcv_flags;
		}
		if (n > 0 && msgbuf_append(m, chunk, (size_t)n) < 0)
			return -2;
		if (flags & MSG_EOR) {
			m->active = 0;
			*cur_sid = -1;
			return sid;
		}
		*cur_sid = sid;
	}
}

/*
 * Send one whole message. The sockets run in explicit EOR mode
 * (SCTP_EXPLICIT_EOR): without it usrsctp refuses (EMSGSIZE) any message
 * larger than the socket send buffer (256 KiB by default), so a message is
 * written in pieces of at most SEND_PIECE bytes and the last piece carries
 * SCTP_EOR. On the wire this is still one SCTP user message (B ... E).
 * 0 on success, -1 on error (errno set).
 */
#define SEND_PIECE (64 * 1024)
static int send_message(struct socket *s, const void *data, size_t len, uint16_t sid,
    uint32_t ppid_net, uint16_t flags)
{
	const unsigned char *p = data;
	size_t off = 0;

	do {
		struct sctp_sndinfo snd;
		size_t piece = len - off;
		ssize_t n;

		if (piece > SEND_PIECE)
			piece = SEND_PIECE;
		memset(&snd, 0, sizeof(snd));
		snd.snd_sid = sid;
		snd.snd_ppid = ppid_net; /* usrsctp copies this to the chunk as is */
		snd.snd_flags = flags;
		if (off + piece == len)
			snd.snd_flags |= SCTP_EOR;
		n = usrsctp_sendv(s, p + off, piece, NULL, 0, &snd, sizeof(snd),
		    SCTP_SENDV_SNDINFO, 0);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
				usleep(1000);
				continue;
			}
			return -1;
		}
		if ((size_t)n > piece) {
			errno = EIO;
			return -1;
		}
		off += (size_t)n;
		if (n == 0 && piece != 0) {
			usleep(1000); /* nothing taken; try again */
			continue;
		}
	} while (off < len);
	return 0;
}

static void addr_to_string(const struct sockaddr *sa, char *out, size_t outlen)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		port = ntohs(sin6->sin6_port);
	}
	snprintf(out, outlen, "%s:%d", ip, port);
}

/* ---------------------------------------------------------------- server */

struct assoc_ctx {
	struct socket *sock;
	unsigned long id;
	char peer[80];
};

static unsigned long remote_encaps_port(struct socket *s)
{
	struct sctp_udpencaps enc;
	socklen_t len = sizeof(enc);
	struct sctp_status st;

	/* The primary path's address selects the net whose port we read. */
	if (get_status(s, &st) < 0)
		return 0;
	memset(&enc, 0, sizeof(enc));
	memcpy(&enc.sue_address, &st.sstat_primary.spinfo_address, sizeof(enc.sue_address));
	if (usrsctp_getsockopt(s, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &enc, &len) < 0)
		return 0;
	return ntohs(enc.sue_port);
}

static void *serve_assoc(void *arg)
{
	struct assoc_ctx *ctx = arg;
	struct socket *s = ctx->sock;
	struct msgbuf *bufs;
	unsigned char *chunk;
	struct sctp_status st;
	const int on = 1;
	unsigned long msgs = 0, bytes = 0;
	int cur_sid = -1;

	bufs = calloc(65536, sizeof(*bufs));
	chunk = malloc(READ_CHUNK);
	if (bufs == NULL || chunk == NULL) {
		logmsg("assoc %lu: out of memory", ctx->id);
		goto out;
	}
	/* Inherited from the listener, but set again in case: cheap. */
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof(on)) < 0)
		logmsg("assoc %lu: setsockopt SCTP_RECVRCVINFO: %s", ctx->id, strerror(errno));
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof(on)) < 0)
		logmsg("assoc %lu: setsockopt SCTP_NODELAY: %s", ctx->id, strerror(errno));
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_EXPLICIT_EOR, &on, sizeof(on)) < 0)
		logmsg("assoc %lu: setsockopt SCTP_EXPLICIT_EOR: %s", ctx->id, strerror(errno));

	if (get_status(s, &st) == 0) {
		char prim[80];

		addr_to_string((struct sockaddr *)&st.sstat_primary.spinfo_address, prim,
		    sizeof(prim));
		logmsg("assoc %lu: accepted from %s (primary %s), streams in=%u out=%u, "
		    "remote udp encaps port %lu, peer rwnd %u",
		    ctx->id, ctx->peer, prim, st.sstat_instrms, st.sstat_outstrms,
		    remote_encaps_port(s), st.sstat_rwnd);
	} else {
		logmsg("assoc %lu: accepted from %s (SCTP_STATUS: %s)", ctx->id, ctx->peer,
		    strerror(errno));
	}

	for (;;) {
		int sid = recv_message(s, bufs, chunk, &cur_sid);
		struct msgbuf *m;

		if (sid == -1) {
			logmsg("assoc %lu: peer closed after %lu messages (%lu bytes) echoed",
			    ctx->id, msgs, bytes);
			break;
		}
		if (sid == -2) {
			logmsg("assoc %lu: recv: %s (after %lu messages echoed)", ctx->id,
			    strerror(errno), msgs);
			break;
		}
		m = &bufs[sid];
		if (send_message(s, m->data, m->len, (uint16_t)sid, m->ppid,
		        (m->flags & SCTP_UNORDERED) ? SCTP_UNORDERED : 0) < 0) {
			logmsg("assoc %lu: echo of %zu bytes on stream %d: %s", ctx->id, m->len,
			    sid, strerror(errno));
			break;
		}
		msgs++;
		bytes += m->len;
		m->len = 0;
		if (m->cap > 4u * READ_CHUNK) { /* do not keep 1 MiB per stream around */
			free(m->data);
			m->data = NULL;
			m->cap = 0;
		}
	}
	{
		struct sctpstat stat;

		memset(&stat, 0, sizeof(stat));
		usrsctp_get_stat(&stat);
		logmsg("assoc %lu: stack totals: packets in=%u out=%u, crc checked=%u "
		    "skipped=%u bad=%u", ctx->id, stat.sctps_inpackets, stat.sctps_outpackets,
		    stat.sctps_recvswcrc, stat.sctps_recvhwcrc, stat.sctps_badsum);
	}
out:
	usrsctp_close(s);
	if (bufs != NULL) {
		for (int i = 0; i < 65536; i++)
			free(bufs[i].data);
		free(bufs);
	}
	free(chunk);
	free(ctx);
	return NULL;
}

static int run_server(int argc, char **argv)
{
	struct socket *ls;
	struct sockaddr_in sin;
	int udp_port;
	unsigned long next_id = 1;

	if (argc != 1)
		die("server takes one argument: <udp_port> (see --help)");
	udp_port = parse_port(argv[0], "udp_port");

	stack_init(udp_port);
	ls = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
	if (ls == NULL)
		die("usrsctp_socket: %s", strerror(errno));
	/* On the listener: accepted associations inherit these (INITMSG must be set
	 * before the INIT arrives, so the listener is the only place it matters). */
	set_common_opts(ls, "listener");

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(SCTP_PORT);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	if (usrsctp_bind(ls, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		die("usrsctp_bind SCTP port %d: %s", SCTP_PORT, strerror(errno));
	if (usrsctp_listen(ls, 16) < 0)
		die("usrsctp_listen: %s", strerror(errno));

	printf("listening udp=%d\n", udp_port);
	fflush(stdout);

	for (;;) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		struct socket *s;
		struct assoc_ctx *ctx;
		pthread_t th;

		memset(&peer, 0, sizeof(peer));
		s = usrsctp_accept(ls, (struct sockaddr *)&peer, &plen);
		if (s == NULL) {
			if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED)
				continue;
			logmsg("usrsctp_accept: %s", strerror(errno));
			sleep(1);
			continue;
		}
		ctx = calloc(1, sizeof(*ctx));
		if (ctx == NULL) {
			logmsg("out of memory; dropping association");
			usrsctp_close(s);
			continue;
		}
		ctx->sock = s;
		ctx->id = next_id++;
		addr_to_string((struct sockaddr *)&peer, ctx->peer, sizeof(ctx->peer));
		if (pthread_create(&th, NULL, serve_assoc, ctx) != 0) {
			logmsg("pthread_create failed; serving association %lu inline", ctx->id);
			serve_assoc(ctx);
			continue;
		}
		pthread_detach(th);
	}
	return 0;
}

/* ---------------------------------------------------------------- client */

static int g_timeout = DEFAULT_TIMEOUT;
static volatile int g_received;   /* messages verified so far */
static volatile int g_sent;       /* messages handed to usrsctp so far */
static const char *volatile g_phase = "while associating";

static void put_uint(char *buf, size_t *pos, unsigned v)
{
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (n > 0)
		buf[(*pos)++] = tmp[--n];
}

static void on_alarm(int sig)
{
	char buf[200];
	size_t pos = 0;
	const char *a = "error: timeout after ";
	const char *b0 = " s ";
	const char *b = " (sent ";
	const char *c = ", echoed back ";
	const char *d = ")\n";

	(void)sig;
	memcpy(buf + pos, a, strlen(a)); pos += strlen(a);
	put_uint(buf, &pos, (unsigned)g_timeout);
	memcpy(buf + pos, b0, strlen(b0)); pos += strlen(b0);
	memcpy(buf + pos, g_phase, strlen(g_phase)); pos += strlen(g_phase);
	memcpy(buf + pos, b, strlen(b)); pos += strlen(b);
	put_uint(buf, &pos, (unsigned)g_sent);
	memcpy(buf + pos, c, strlen(c)); pos += strlen(c);
	put_uint(buf, &pos, (unsigned)g_received);
	memcpy(buf + pos, d, strlen(d)); pos += strlen(d);
	if (write(2, buf, pos) < 0) {
		/* nothing left to do */
	}
	_exit(1);
}

static unsigned char pattern_byte(size_t i, int s)
{
	return (unsigned char)((i * 31 + (size_t)s) & 0xff);
}

/* USRSCTP_PEER_SPDY_FRAMES=1: every message is one SPDY DATA frame (as speedy's SCTP
 * mapping requires, docs/sctp.md): an 8-byte header for SPDY stream 2*s (even: a stream
 * the server side opens, so speedy hands it over without waiting for a SYN), then the
 * pattern. Echoes are matched by that stream id, whatever SCTP stream they come on. */
static int g_spdy_frames;

static unsigned char msg_byte(size_t i, size_t len, int s)
{
	if (g_spdy_frames && i < 8) {
		uint32_t id = (uint32_t)s * 2;
		size_t body = len - 8;
		unsigned char h[8] = {
			(unsigned char)(id >> 24), (unsigned char)(id >> 16), (unsigned char)(id >> 8),
			(unsigned char)id, 0, (unsigned char)(body >> 16), (unsigned char)(body >> 8),
			(unsigned char)body,
		};
		return h[i];
	}
	return pattern_byte(i, s);
}

struct sender_ctx {
	struct socket *sock;
	int n_streams;
	size_t msg_size;
	int first_already_sent;
};

static void fill_pattern(unsigned char *buf, size_t len, int s)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = msg_byte(i, len, s);
}

static void *sender(void *arg)
{
	struct sender_ctx *sc = arg;
	unsigned char *buf = malloc(sc->msg_size ? sc->msg_size : 1);

	if (buf == NULL)
		die("out of memory");
	for (int s = sc->first_already_sent ? 2 : 1; s <= sc->n_streams; s++) {
		fill_pattern(buf, sc->msg_size, s);
		if (send_message(sc->sock, buf, sc->msg_size, (uint16_t)s, htonl(PPID_BINARY), 0) < 0)
			die("send on stream %d: %s (sent %d, echoed back %d)", s, strerror(errno),
			    g_sent, g_received);
		g_sent = g_sent + 1;
	}
	free(buf);
	return NULL;
}

static void client_finish(struct socket *s)
{
	usrsctp_close(s); /* graceful SHUTDOWN */
	for (int i = 0; i < 200; i++) { /* up to ~2 s for the SHUTDOWN to complete */
		if (usrsctp_finish() == 0)
			return;
		usleep(10000);
	}
}

static int run_client(int argc, char **argv)
{
	int local_udp, remote_udp, n_streams;
	long msg_size;
	struct in_addr rip;
	struct socket *s;
	struct sockaddr_in sin;
	struct sctp_udpencaps enc;
	struct sctp_status st;
	struct sender_ctx sc;
	struct msgbuf *bufs;
	unsigned char *chunk;
	unsigned char *seen;
	pthread_t th;
	int cur_sid = -1, got = 0;
	const char *env;
	int early = 0;
	int local_sctp = SCTP_PORT;

	if (argc != 5)
		die("client takes five arguments: <udp_port_local> <remote_ip> "
		    "<remote_udp_port> <n_streams> <msg_size> (see --help)");
	local_udp = parse_port(argv[0], "udp_port_local");
	if (inet_pton(AF_INET, argv[1], &rip) != 1)
		die("bad remote_ip '%s' (want an IPv4 address)", argv[1]);
	remote_udp = parse_port(argv[2], "remote_udp_port");
	n_streams = (int)parse_long(argv[3], "n_streams", 1, N_STREAMS_OFFERED - 1);
	msg_size = parse_long(argv[4], "msg_size", 1, (long)MAX_MESSAGE);

	env = getenv("USRSCTP_PEER_TIMEOUT");
	if (env != NULL && env[0] != '\0')
		g_timeout = (int)parse_long(env, "USRSCTP_PEER_TIMEOUT", 1, 86400);
	env = getenv("USRSCTP_PEER_LOCAL_SCTP_PORT");
	if (env != NULL && env[0] != '\0')
		local_sctp = (int)parse_long(env, "USRSCTP_PEER_LOCAL_SCTP_PORT", 0, 65535);
	env = getenv("USRSCTP_PEER_EARLY_DATA");
	early = env != NULL && env[0] != '\0' && strcmp(env, "0") != 0;
	env = getenv("USRSCTP_PEER_SPDY_FRAMES");
	g_spdy_frames = env != NULL && env[0] != '\0' && strcmp(env, "0") != 0;
	if (g_spdy_frames && (msg_size < 8 || msg_size > 8 + 0xffffff))
		die("USRSCTP_PEER_SPDY_FRAMES: <msg_size> must be 8 to %d (one SPDY frame)",
		    8 + 0xffffff);
	signal(SIGALRM, on_alarm);
	alarm((unsigned)g_timeout);

	stack_init(local_udp);
	s = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
	if (s == NULL)
		die("usrsctp_socket: %s", strerror(errno));
	set_common_opts(s, "client");

	/* Bind the local SCTP port too: speedy uses 5000 on both sides. An SCTP
	 * association is named by addresses and SCTP ports only (the UDP port is not
	 * part of it), so concurrent clients from one IP need distinct SCTP ports. */
	if (local_sctp != 0) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)local_sctp);
		sin.sin_addr.s_addr = htonl(INADDR_ANY);
		if (usrsctp_bind(s, (struct sockaddr *)&sin, sizeof(sin)) < 0)
			die("usrsctp_bind SCTP port %d: %s", local_sctp, strerror(errno));
	}

	/* Every packet of the association goes over UDP to remote_udp. Wildcard
	 * address + no association yet = the endpoint default for the association
	 * connect() creates. */
	memset(&enc, 0, sizeof(enc));
	((struct sockaddr_in *)&enc.sue_address)->sin_family = AF_INET;
	((struct sockaddr_in *)&enc.sue_address)->sin_addr.s_addr = htonl(INADDR_ANY);
	enc.sue_assoc_id = SCTP_FUTURE_ASSOC;
	enc.sue_port = htons((uint16_t)remote_udp);
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &enc, sizeof(enc)) < 0)
		die("setsockopt SCTP_REMOTE_UDP_ENCAPS_PORT: %s", strerror(errno));

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(SCTP_PORT);
	sin.sin_addr = rip;

	memset(&sc, 0, sizeof(sc));
	sc.sock = s;
	sc.n_streams = n_streams;
	sc.msg_size = (size_t)msg_size;

	if (early) {
		/* Queue stream 1's message while the handshake is under way: usrsctp
		 * bundles queued DATA into the COOKIE ECHO packet. */
		unsigned char *buf = malloc((size_t)msg_size);

		if (buf == NULL)
			die("out of memory");
		fill_pattern(buf, (size_t)msg_size, 1);
		usrsctp_set_non_blocking(s, 1);
		if (usrsctp_connect(s, (struct sockaddr *)&sin, sizeof(sin)) < 0 &&
		    errno != EINPROGRESS)
			die("connect to %s SCTP port %d via UDP %d: %s", argv[1], SCTP_PORT,
			    remote_udp, strerror(errno));
		/* Still non-blocking: queued at once, in COOKIE WAIT. */
		if (send_message(s, buf, (size_t)msg_size, 1, htonl(PPID_BINARY), 0) < 0)
			die("early send on stream 1: %s", strerror(errno));
		usrsctp_set_non_blocking(s, 0);
		g_sent = 1;
		sc.first_already_sent = 1;
		free(buf);
	} else if (usrsctp_connect(s, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		die("connect to %s SCTP port %d via UDP %d: %s", argv[1], SCTP_PORT, remote_udp,
		    strerror(errno));
	}

	if (!early) {
		if (get_status(s, &st) < 0)
			die("getsockopt SCTP_STATUS: %s", strerror(errno));
		logmsg("client: associated, streams in=%u out=%u", st.sstat_instrms,
		    st.sstat_outstrms);
		if (st.sstat_outstrms < n_streams + 1)
			die("peer allows only %u outbound streams; need %d (streams 0..%d)",
			    st.sstat_outstrms, n_streams + 1, n_streams);
	}

	g_phase = "waiting for echoes";
	/* Send from a thread and read here, so neither side's buffers can fill up
	 * and deadlock the echo. */
	if (pthread_create(&th, NULL, sender, &sc) != 0)
		die("pthread_create failed");

	bufs = calloc(65536, sizeof(*bufs));
	chunk = malloc(READ_CHUNK);
	seen = calloc((size_t)n_streams + 1, 1);
	if (bufs == NULL || chunk == NULL || seen == NULL)
		die("out of memory");

	while (got < n_streams) {
		int sid = recv_message(s, bufs, chunk, &cur_sid);
		struct msgbuf *m;

		if (sid == -1)
			die("peer closed the association after %d of %d echoes", got, n_streams);
		if (sid == -2)
			die("recv: %s (after %d of %d echoes)", strerror(errno), got, n_streams);
		m = &bufs[sid];
		if (g_spdy_frames && m->len >= 8) {
			/* Which message this is comes from its SPDY stream id. */
			uint32_t id = ((uint32_t)m->data[0] << 24 | (uint32_t)m->data[1] << 16 |
			    (uint32_t)m->data[2] << 8 | m->data[3]) & 0x7fffffffu;
			int want = (int)(id / 2);
			if (want < 1 || want > n_streams)
				die("echo of unknown SPDY stream %u on SCTP stream %d", id, sid);
			/* Its bytes were read into bufs[sid]; compare as message `want`. */
			if (seen[want])
				die("second echo of SPDY stream %u", id);
			if (ntohl(m->ppid) != PPID_BINARY)
				die("echo of SPDY stream %u has PPID %u, want %d", id, ntohl(m->ppid),
				    PPID_BINARY);
			if (m->len != (size_t)msg_size)
				die("echo of SPDY stream %u is %zu bytes, want %ld", id, m->len, msg_size);
			for (size_t i = 0; i < m->len; i++) {
				if (m->data[i] != msg_byte(i, m->len, want))
					die("echo of SPDY stream %u differs at byte %zu", id, i);
			}
			seen[want] = 1;
			got++;
			g_received = got;
			m->len = 0;
			continue;
		}
		if (sid < 1 || sid > n_streams)
			die("echo on unexpected stream %d (%zu bytes)", sid, m->len);
		if (seen[sid])
			die("second message on stream %d", sid);
		if (ntohl(m->ppid) != PPID_BINARY)
			die("echo on stream %d has PPID %u, want %d", sid, ntohl(m->ppid),
			    PPID_BINARY);
		if (m->len != (size_t)msg_size)
			die("echo on stream %d is %zu bytes, want %ld", sid, m->len, msg_size);
		for (size_t i = 0; i < m->len; i++) {
			if (m->data[i] != msg_byte(i, m->len, sid))
				die("echo on stream %d differs at byte %zu: 0x%02x, want 0x%02x", sid,
				    i, m->data[i], msg_byte(i, m->len, sid));
		}
		seen[sid] = 1;
		got++;
		g_received = got;
	}
	pthread_join(th, NULL);

	if (early && get_status(s, &st) == 0)
		logmsg("client: streams in=%u out=%u", st.sstat_instrms, st.sstat_outstrms);
	{
		struct sctpstat stat;

		memset(&stat, 0, sizeof(stat));
		usrsctp_get_stat(&stat);
		logmsg("client: packets in=%u out=%u, crc checked=%u skipped=%u bad=%u",
		    stat.sctps_inpackets, stat.sctps_outpackets, stat.sctps_recvswcrc,
		    stat.sctps_recvhwcrc, stat.sctps_badsum);
	}
	printf("ok %d messages\n", n_streams);
	fflush(stdout);
	alarm(0); /* the verdict is in; client_finish is bounded on its own */
	client_finish(s);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	        strcmp(argv[1], "help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "server") == 0)
		return run_server(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "client") == 0)
		return run_client(argc - 2, argv + 2);
	usage(stderr);
	return 2;
}
