#!/usr/bin/env node
'use strict'

// Captures real node-spdy (npm `spdy` 4.0.2 / `spdy-transport` 3.0.0) frames for the
// byte vectors in crates/spdy/tests/frames.rs.
//
//   npm ci --prefix interop            # once, from the repository root
//   node crates/spdy/tests/capture/node_capture.js spdy/3.1   # or spdy/3, spdy/2
//
// Runs interop/server.js (cleartext) and interop/client.js GET /hello.txt through a TCP
// relay on 127.0.0.1, and prints, as hex, every control frame each side sent:
//   c2s <hex of the whole frame>   client -> server (SETTINGS, SYN_STREAM, ...)
//   s2c <hex of the whole frame>   server -> client (SETTINGS, SYN_REPLY, ...)
// DATA frames are summarised, not dumped.

const net = require('net')
const path = require('path')
const fs = require('fs')
const os = require('os')
const { spawn } = require('child_process')

const protocol = process.argv[2] || 'spdy/3.1'
const interop = path.resolve(__dirname, '../../../../interop')
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'spdy-capture-'))
fs.writeFileSync(path.join(root, 'hello.txt'), 'hello from node-spdy\n')

function frames (name, buf) {
  let off = 0
  while (off + 8 <= buf.length) {
    const len = buf.readUIntBE(off + 5, 3)
    if (off + 8 + len > buf.length) break
    const f = buf.subarray(off, off + 8 + len)
    if (f[0] & 0x80) console.log(name, f.toString('hex'))
    else console.log(name, 'DATA stream=' + (f.readUInt32BE(0) & 0x7fffffff) + ' len=' + len + ' flags=' + f[4])
    off += 8 + len
  }
}

const server = spawn(process.execPath, [path.join(interop, 'server.js'), '--port', '0', '--plain', '--root', root],
  { stdio: ['ignore', 'pipe', 'inherit'] })
server.stdout.once('data', function (line) {
  const m = /listening on 127\.0\.0\.1:(\d+)/.exec(String(line))
  if (!m) throw new Error('unexpected server output: ' + line)
  const target = parseInt(m[1], 10)
  const c2s = []
  const s2c = []
  const relay = net.createServer(function (down) {
    const up = net.connect(target, '127.0.0.1')
    down.on('data', function (d) { c2s.push(d); up.write(d) })
    up.on('data', function (d) { s2c.push(d); down.write(d) })
    down.on('close', function () { up.destroy() })
    up.on('close', function () { down.destroy() })
    down.on('error', function () {})
    up.on('error', function () {})
  })
  relay.listen(0, '127.0.0.1', function () {
    const port = relay.address().port
    const client = spawn(process.execPath, [path.join(interop, 'client.js'),
      'http://127.0.0.1:' + port + '/hello.txt', '--protocol', protocol], { stdio: ['ignore', 'pipe', 'inherit'] })
    client.stdout.on('data', function (d) { process.stderr.write('client: ' + d) })
    client.on('exit', function () {
      setTimeout(function () {
        console.log('# relay port', port, 'protocol', protocol)
        frames('c2s', Buffer.concat(c2s))
        frames('s2c', Buffer.concat(s2c))
        server.kill()
        relay.close()
        fs.rmSync(root, { recursive: true })
      }, 200)
    })
  })
})
