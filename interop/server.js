#!/usr/bin/env node
'use strict'

// A node-spdy (npm `spdy`, engine `spdy-transport`) file server for speedy's
// interop tests.
//
//   node server.js [--host 127.0.0.1] [--port 0] [--tls | --plain] --root DIR
//                  [--protocols spdy/3.1,spdy/3,spdy/2,http/1.1]
//                  [--auto-spdy31] [--reset-path PATH]... [--push PAGE=P1,P2]...
//                  [--verbose]
//
// First stdout line: `listening on 127.0.0.1:PORT`.
//
// Behaviour:
//   GET/HEAD PATH   the file ROOT/PATH (404 when missing, 400 when escaping ROOT)
//   POST/PUT PATH   answers 200 with the request body (any path, e.g. /echo)
//   reset paths     the stream is reset by the server: RST_STREAM CANCEL
//                   (default reset path: /reset)
//   push map        GET PAGE pushes P1, P2 ... (files under ROOT) before the
//                   response body (default: /pushed-page.html=/push.css)
//
// --plain (default) serves cleartext SPDY with `spdy: { plain: true, ssl: false }`:
// node-spdy sniffs the first byte (0x80 = SPDY, version taken from the first
// control frame: 2 or 3; anything else is HTTP/1.1). Version 3 means SPDY/3
// unless --auto-spdy31 is given: then the server sends session WINDOW_UPDATEs
// from the start and switches to 3.1 when it receives one (spdy-transport's
// `autoSpdy31`).
// --tls serves TLS with the committed self-signed pair in certs/ and offers the
// protocols of --protocols via ALPN (and NPN where the TLS stack has it).

process.noDeprecation = true // node-spdy touches process.binding('http_parser') etc.

const fs = require('fs')
const path = require('path')
const spdy = require('spdy')

function usage (msg) {
  if (msg) process.stderr.write('server.js: ' + msg + '\n')
  process.stderr.write('usage: node server.js [--host H] [--port N] [--tls|--plain] --root DIR ' +
    '[--protocols LIST] [--auto-spdy31] [--reset-path PATH]... [--push PAGE=P1,P2]... [--verbose]\n')
  process.exit(2)
}

function parseArgs (argv) {
  const opts = {
    host: '127.0.0.1',
    port: 0,
    tls: false,
    root: null,
    protocols: ['spdy/3.1', 'spdy/3', 'spdy/2', 'http/1.1'],
    autoSpdy31: false,
    resetPaths: [],
    push: {},
    verbose: false
  }
  let resetGiven = false
  let pushGiven = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const next = () => {
      if (i + 1 >= argv.length) usage(a + ' needs a value')
      return argv[++i]
    }
    switch (a) {
      case '--host': opts.host = next(); break
      case '--port': opts.port = parseInt(next(), 10); break
      case '--tls': opts.tls = true; break
      case '--plain': opts.tls = false; break
      case '--root': opts.root = path.resolve(next()); break
      case '--protocols': opts.protocols = next().split(',').filter(Boolean); break
      case '--auto-spdy31': opts.autoSpdy31 = true; break
      case '--reset-path': opts.resetPaths.push(next()); resetGiven = true; break
      case '--push': {
        const spec = next()
        const eq = spec.indexOf('=')
        if (eq <= 0) usage('--push wants PAGE=P1,P2')
        opts.push[spec.slice(0, eq)] = spec.slice(eq + 1).split(',').filter(Boolean)
        pushGiven = true
        break
      }
      case '--verbose': case '-v': opts.verbose = true; break
      case '--help': case '-h': usage()
        break
      default: usage('unknown argument ' + a)
    }
  }
  if (!opts.root) usage('--root is required')
  if (!resetGiven) opts.resetPaths = ['/reset']
  if (!pushGiven) opts.push = { '/pushed-page.html': ['/push.css'] }
  return opts
}

const opts = parseArgs(process.argv.slice(2))

function log () {
  if (!opts.verbose) return
  process.stderr.write('[node-spdy server] ' + Array.from(arguments).join(' ') + '\n')
}

const TYPES = {
  '.html': 'text/html',
  '.css': 'text/css',
  '.js': 'application/javascript',
  '.json': 'application/json',
  '.txt': 'text/plain',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.gif': 'image/gif'
}

function contentType (p) {
  return TYPES[path.extname(p).toLowerCase()] || 'application/octet-stream'
}

// Maps a URL path to a file under the root, or null when it escapes the root.
function resolveFile (urlPath) {
  let decoded
  try {
    decoded = decodeURIComponent(urlPath.split('?')[0])
  } catch (e) {
    return null
  }
  if (decoded.indexOf('\0') !== -1) return null
  const full = path.resolve(opts.root, '.' + path.posix.normalize('/' + decoded))
  if (full !== opts.root && !full.startsWith(opts.root + path.sep)) return null
  return full
}

// With --verbose, log every frame spdy-transport receives and every
// connection-level error (set DEBUG=spdy:* for node-spdy's own tracing).
if (opts.verbose) {
  const transport = require('spdy-transport')
  const FramerProto = transport.protocol.spdy.framer.prototype
  ;['requestFrame', 'responseFrame', 'pushFrame', 'headersFrame', 'dataFrame', 'rstFrame',
    'settingsFrame', 'windowUpdateFrame', 'pingFrame', 'goawayFrame'].forEach(function (name) {
    const orig = FramerProto[name]
    FramerProto[name] = function (frame) {
      const f = frame || {}
      const parts = ['send', name.replace(/Frame$/, '')]
      if (f.id !== undefined) parts.push('id=' + f.id)
      if (f.promisedId !== undefined) parts.push('promised=' + f.promisedId)
      if (f.fin) parts.push('fin')
      if (f.data) parts.push('len=' + f.data.length)
      if (f.code !== undefined) parts.push('code=' + f.code)
      if (f.delta !== undefined) parts.push('delta=' + f.delta)
      if (f.lastId !== undefined) parts.push('last=' + f.lastId)
      if (f.path !== undefined) parts.push('path=' + f.path)
      if (f.status !== undefined) parts.push('status=' + f.status)
      if (name === 'settingsFrame') parts.push(JSON.stringify(f))
      log(parts.join(' '))
      return orig.apply(this, arguments)
    }
  })
  const origCreate = transport.connection.create
  transport.connection.create = function (socket, options) {
    const conn = origCreate.call(this, socket, options)
    conn.on('frame', function (frame) { log('recv frame', describeFrame(frame)) })
    conn.on('error', function (err) { log('connection error:', err.message) })
    conn.on('version', function (v) { log('session version', v) })
    return conn
  }
}

function describeFrame (f) {
  const parts = [f.type]
  if (f.id !== undefined) parts.push('id=' + f.id)
  if (f.promisedId !== undefined) parts.push('promised=' + f.promisedId)
  if (f.fin) parts.push('fin')
  if (f.type === 'DATA') parts.push('len=' + f.data.length)
  if (f.code !== undefined) parts.push('code=' + f.code)
  if (f.delta !== undefined) parts.push('delta=' + f.delta)
  if (f.lastId !== undefined) parts.push('last=' + f.lastId)
  if (f.settings) parts.push(JSON.stringify(f.settings))
  if (f.headers) parts.push(JSON.stringify(f.headers))
  if (f.writable === false) parts.push('unidirectional')
  return parts.join(' ')
}

function versionName (v) {
  return v === null || v === undefined ? 'spdy/?' : 'spdy/' + v
}

// ---------------------------------------------------------------------------
// SPDY requests are handled at the spdy-transport stream level.
//
// node-spdy's bridge into node's http module (handle-thing + http-deceiver)
// is broken on current Node versions (node-spdy issue #369: "Callback called
// multiple times" on the first response write), so the server replaces
// Server#_onStream: node-spdy still accepts the socket, negotiates TLS/ALPN or
// sniffs plain SPDY and runs the spdy-transport Connection; we answer on its
// Stream objects (respond / write / end / pushPromise / abort).
// ---------------------------------------------------------------------------

function streamError (stream, what) {
  stream.on('error', function (err) { log(what, 'stream', stream.id, 'error:', err.message) })
}

function respondSimple (stream, status, text) {
  stream.respond(status, { 'content-type': 'text/plain', 'content-length': String(Buffer.byteLength(text)) })
  stream.end(text)
}

// Opens every push mapped to urlPath (SYN_STREAM with Associated-To-Stream-ID),
// then calls done(); the parent response (and its FIN) come after.
function pushResources (stream, urlPath, done) {
  const list = opts.push[urlPath]
  if (!list || list.length === 0) return done()
  let pending = list.length
  function one () { if (--pending === 0) done() }
  list.forEach(function (p) {
    const file = resolveFile(p)
    let body = null
    try {
      if (file) body = fs.readFileSync(file)
    } catch (e) {
      body = null
    }
    if (body === null) {
      log('push source missing', p)
      one()
      return
    }
    const push = stream.pushPromise({
      path: p,
      method: 'GET',
      status: 200,
      host: stream.headers[':authority'] || stream.host,
      headers: { accept: '*/*' },
      response: {
        'content-type': contentType(p),
        'content-length': String(body.length)
      }
    }, function (err) {
      if (err) log('push', p, 'failed:', err.message)
      else log('pushed', p, body.length, 'bytes on stream', push.id)
      one()
    })
    streamError(push, 'push')
    push.end(body)
  })
}

function onSpdyStream (stream) {
  const version = versionName(stream.connection.getVersion())
  const method = stream.method
  const urlPath = (stream.path || '/').split('?')[0]
  log(version, 'stream', stream.id, method, stream.path)
  streamError(stream, 'request')

  if (opts.resetPaths.indexOf(urlPath) !== -1) {
    log('resetting stream', stream.id, '(RST_STREAM CANCEL)')
    stream.resume()
    // spdy-transport: Stream#abort(code) sends RST_STREAM (default CANCEL).
    stream.abort('CANCEL')
    return
  }

  if (method === 'POST' || method === 'PUT') {
    const chunks = []
    stream.on('data', function (c) { chunks.push(c) })
    stream.on('end', function () {
      const body = Buffer.concat(chunks)
      log('echo', body.length, 'bytes on stream', stream.id)
      stream.respond(200, {
        'content-type': 'application/octet-stream',
        'content-length': String(body.length),
        'x-spdy-version': version
      })
      stream.end(body)
    })
    return
  }

  // GET/HEAD: nothing to read but the FIN.
  stream.resume()
  if (method !== 'GET' && method !== 'HEAD') return respondSimple(stream, 405, 'method not allowed\n')

  const file = resolveFile(urlPath)
  if (file === null) return respondSimple(stream, 400, 'bad path\n')

  fs.stat(file, function (err, st) {
    if (err || !st.isFile()) return respondSimple(stream, 404, 'not found\n')
    pushResources(stream, urlPath, function () {
      stream.respond(200, {
        'content-type': contentType(file),
        'content-length': String(st.size),
        'x-spdy-version': version
      })
      if (method === 'HEAD') {
        stream.end()
        return
      }
      const rs = fs.createReadStream(file)
      rs.on('error', function (e) {
        log('read error', file, e.message)
        stream.abort('INTERNAL_ERROR')
      })
      rs.pipe(stream)
    })
  })
}

// Plain HTTP/1.x (TLS with ALPN http/1.1, or a non-SPDY first byte in plain
// mode) goes through node's own http server untouched.
function onHttpRequest (req, res) {
  const urlPath = req.url.split('?')[0]
  log('http/' + req.httpVersion, req.method, req.url)
  if (opts.resetPaths.indexOf(urlPath) !== -1) {
    req.socket.destroy()
    return
  }
  if (req.method === 'POST' || req.method === 'PUT') {
    const chunks = []
    req.on('data', function (c) { chunks.push(c) })
    req.on('end', function () {
      const body = Buffer.concat(chunks)
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
      res.end(body)
    })
    return
  }
  const file = resolveFile(urlPath)
  if (file === null) { res.writeHead(400); res.end('bad path\n'); return }
  fs.stat(file, function (err, st) {
    if (err || !st.isFile()) { res.writeHead(404); res.end('not found\n'); return }
    res.writeHead(200, { 'content-type': contentType(file), 'content-length': st.size })
    if (req.method === 'HEAD') return res.end()
    fs.createReadStream(file).pipe(res)
  })
}

const spdyOptions = {
  protocols: opts.protocols,
  connection: {
    autoSpdy31: opts.autoSpdy31
  }
}

let server
if (opts.tls) {
  const certDir = path.join(__dirname, 'certs')
  server = spdy.createServer({
    key: fs.readFileSync(path.join(certDir, 'key.pem')),
    cert: fs.readFileSync(path.join(certDir, 'cert.pem')),
    spdy: spdyOptions
  }, onHttpRequest)
} else {
  spdyOptions.plain = true
  spdyOptions.ssl = false
  server = spdy.createServer({ spdy: spdyOptions }, onHttpRequest)
}
server._onStream = onSpdyStream

server.on('clientError', function (err) { log('client error:', err.message) })
server.on('tlsClientError', function (err) { log('tls client error:', err.message) })
server.on('secureConnection', function (sock) {
  log('TLS connection, ALPN:', sock.alpnProtocol)
})
server.on('error', function (err) {
  process.stderr.write('server.js: ' + err.message + '\n')
  process.exit(1)
})

server.listen(opts.port, opts.host, function () {
  const addr = server.address()
  process.stdout.write('listening on ' + addr.address + ':' + addr.port + '\n')
  process.stderr.write('node-spdy server: ' + (opts.tls ? 'TLS, protocols ' + opts.protocols.join(',') : 'plain') +
    (opts.autoSpdy31 ? ', autoSpdy31' : '') + ', root ' + opts.root + '\n')
})

function shutdown () { process.exit(0) }
process.on('SIGTERM', shutdown)
process.on('SIGINT', shutdown)
