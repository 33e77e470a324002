#!/usr/bin/env node
'use strict'

// Debugging aid: a TCP relay for cleartext SPDY that prints every frame header
// (direction, version, type, flags, stream id, length, and the fixed fields of
// control frames) on stderr. Header blocks are not inflated.
//
//   node frametap.js --listen 0 --target 127.0.0.1:PORT
//
// First stdout line: `listening on 127.0.0.1:PORT`.

const net = require('net')

let listenPort = 0
let target = null
const argv = process.argv.slice(2)
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--listen') listenPort = parseInt(argv[++i], 10)
  else if (argv[i] === '--target') target = argv[++i]
  else {
    process.stderr.write('usage: node frametap.js --listen PORT --target HOST:PORT\n')
    process.exit(2)
  }
}
if (!target) {
  process.stderr.write('frametap.js: --target HOST:PORT is required\n')
  process.exit(2)
}
const [thost, tport] = [target.slice(0, target.lastIndexOf(':')), parseInt(target.slice(target.lastIndexOf(':') + 1), 10)]

const TYPES = {
  1: 'SYN_STREAM',
  2: 'SYN_REPLY',
  3: 'RST_STREAM',
  4: 'SETTINGS',
  5: 'NOOP',
  6: 'PING',
  7: 'GOAWAY',
  8: 'HEADERS',
  9: 'WINDOW_UPDATE',
  10: 'CREDENTIAL',
  0xf000: 'X_FORWARDED_FOR'
}

function describe (buf) {
  if (buf[0] & 0x80) {
    const version = buf.readUInt16BE(0) & 0x7fff
    const type = buf.readUInt16BE(2)
    const flags = buf[4]
    const len = buf.readUIntBE(5, 3)
    const body = buf.subarray(8)
    let extra = ''
    const u32 = (o) => (body.length >= o + 4 ? body.readUInt32BE(o) : NaN)
    switch (type) {
      case 1: extra = `id=${u32(0) & 0x7fffffff} assoc=${u32(4) & 0x7fffffff} pri=${version === 2 ? body[8] >> 6 : body[8] >> 5}` +
        (flags & 1 ? ' FIN' : '') + (flags & 2 ? ' UNIDIRECTIONAL' : ''); break
      case 2: case 8: extra = `id=${u32(0) & 0x7fffffff}` + (flags & 1 ? ' FIN' : ''); break
      case 3: extra = `id=${u32(0) & 0x7fffffff} status=${u32(4)}`; break
      case 4: {
        const n = u32(0)
        const entries = []
        for (let i = 0; i < n && 4 + 8 * i + 8 <= body.length; i++) {
          const o = 4 + 8 * i
          const id = version === 2 ? body.readUIntLE(o, 3) : body.readUIntBE(o + 1, 3)
          const fl = version === 2 ? body[o + 3] : body[o]
          entries.push(`${id}(flags ${fl})=${body.readUInt32BE(o + 4)}`)
        }
        extra = entries.join(' ')
        break
      }
      case 6: extra = `id=${u32(0)}`; break
      case 7: extra = `last=${u32(0) & 0x7fffffff}` + (len >= 8 ? ` status=${u32(4)}` : ''); break
      case 9: extra = `id=${u32(0) & 0x7fffffff} delta=${u32(4) & 0x7fffffff}`; break
    }
    return `v${version} ${TYPES[type] || 'type' + type} flags=0x${flags.toString(16)} len=${len} ${extra}`
  }
  const id = buf.readUInt32BE(0) & 0x7fffffff
  const flags = buf[4]
  const len = buf.readUIntBE(5, 3)
  return `DATA id=${id} flags=0x${flags.toString(16)}${flags & 1 ? ' FIN' : ''} len=${len}`
}

function tap (name) {
  let pending = Buffer.alloc(0)
  let bytesToSkip = 0
  return function (chunk) {
    pending = Buffer.concat([pending, chunk])
    for (;;) {
      if (bytesToSkip > 0) {
        const n = Math.min(bytesToSkip, pending.length)
        pending = pending.subarray(n)
        bytesToSkip -= n
        if (bytesToSkip > 0) return
      }
      if (pending.length < 8) return
      const len = pending.readUIntBE(5, 3)
      const head = pending.subarray(0, Math.min(pending.length, 8 + Math.min(len, 64)))
      if (head.length < Math.min(8 + len, 8 + 64)) return
      process.stderr.write(`${name} ${describe(head)}\n`)
      bytesToSkip = 8 + len
    }
  }
}

let conns = 0
const server = net.createServer(function (down) {
  const n = ++conns
  const up = net.connect(tport, thost)
  down.on('data', tap(`[${n}] C->S`))
  up.on('data', tap(`[${n}] S->C`))
  down.pipe(up)
  up.pipe(down)
  down.on('error', () => up.destroy())
  up.on('error', () => down.destroy())
  down.on('close', () => up.destroy())
  up.on('close', () => down.destroy())
})
server.listen(listenPort, '127.0.0.1', function () {
  process.stdout.write(`listening on 127.0.0.1:${server.address().port}\n`)
})
process.on('SIGTERM', () => process.exit(0))
