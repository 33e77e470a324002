#!/usr/bin/env node
'use strict'

// A node-spdy (npm `spdy`) client for speedy's interop tests.
//
//   node client.js URL... [--protocol spdy/3.1|spdy/3|spdy/2] [--concurrency N]
//                  [--post FILE] [--expect-error URL]... [--timeout SECONDS]
//                  [--pause-after N --pause SECONDS] [--header-compression]
//                  [--verbose]
//
// All URLs must share one origin; they are sent over one SPDY session (one
// spdy.createAgent). http:// URLs use cleartext SPDY with prior knowledge of
// the version (`spdy: { plain: true, ssl: false, protocol }`), https:// URLs
// use TLS offering only --protocol via ALPN (rejectUnauthorized: false).
//
// Prints one JSON line per response:
//   {"url","status","protocol","bytes","sha256","pushed":false}
// one per pushed stream:
//   {"url","status","protocol","bytes","sha256","pushed":true,"associated"}
// and one per failed request (e.g. a stream the server reset):
//   {"url","error"}
// --pause-after N --pause S: once N responses have completed, wait S seconds (the
// session stays open and quiet) before starting the rest.
// --header-compression: zlib-compress our header blocks (spdy-transport's client
// default is stored blocks, level 0).
// Exit status: 0 when every failure was expected (--expect-error URL) and every
// expected error happened, 1 otherwise.

process.noDeprecation = true // node-spdy touches deprecated node internals

const crypto = require('crypto')
const fs = require('fs')
const spdy = require('spdy')

function usage (msg) {
  if (msg) process.stderr.write('client.js: ' + msg + '\n')
  process.stderr.write('usage: node client.js URL... [--protocol P] [--concurrency N] [--pause-after N --pause S] [--header-compression] ' +
    '[--post FILE] [--expect-error URL]... [--timeout SECONDS] [--verbose]\n')
  process.exit(2)
}

function parseArgs (argv) {
  const opts = {
    urls: [],
    protocol: 'spdy/3.1',
    concurrency: 1,
    post: null,
    expectError: [],
    timeout: 60,
    pauseAfter: -1,
    pause: 0,
    headerCompression: false,
    verbose: false
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const next = () => {
      if (i + 1 >= argv.length) usage(a + ' needs a value')
      return argv[++i]
    }
    switch (a) {
      case '--protocol': opts.protocol = next(); break
      case '--concurrency': case '-c': opts.concurrency = parseInt(next(), 10); break
      case '--post': case '--data': opts.post = next(); break
      case '--expect-error': opts.expectError.push(next()); break
      case '--timeout': opts.timeout = parseFloat(next()); break
      case '--pause-after': opts.pauseAfter = parseInt(next(), 10); break
      case '--pause': opts.pause = parseFloat(next()); break
      case '--header-compression': opts.headerCompression = true; break
      case '--verbose': case '-v': opts.verbose = true; break
      case '--help': case '-h': usage()
        break
      default:
        if (a.startsWith('-')) usage('unknown argument ' + a)
        opts.urls.push(a)
    }
  }
  if (opts.urls.length === 0) usage('no URL')
  if (!(opts.concurrency >= 1)) usage('bad --concurrency')
  if (['spdy/3.1', 'spdy/3', 'spdy/2'].indexOf(opts.protocol) === -1) {
    usage('--protocol must be spdy/3.1, spdy/3 or spdy/2')
  }
  return opts
}

const opts = parseArgs(process.argv.slice(2))

function log () {
  if (!opts.verbose) return
  process.stderr.write('[node-spdy client] ' + Array.from(arguments).join(' ') + '\n')
}

const parsed = opts.urls.map(function (u) { return new URL(u) })
const origin = parsed[0].origin
for (const u of parsed) {
  if (u.origin !== origin) usage('all URLs must have the same origin (' + u.href + ')')
}
const secure = parsed[0].protocol === 'https:'
const host = parsed[0].hostname
const port = parseInt(parsed[0].port, 10) || (secure ? 443 : 80)

const postBody = opts.post === null ? null : fs.readFileSync(opts.post)

const spdyOptions = {
  protocols: [opts.protocol],
  protocol: opts.protocol
}
if (opts.headerCompression) spdyOptions.connection = { headerCompression: true }
if (!secure) {
  spdyOptions.plain = true
  spdyOptions.ssl = false
}

// With --verbose, log every frame spdy-transport receives.
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
  return parts.join(' ')
}

// node-spdy's agent opens the TCP/TLS connection, negotiates the protocol
// (ALPN for https, prior knowledge for http) and creates the spdy-transport
// Connection. Requests are then made on that Connection directly: node-spdy's
// bridge into node's http module (handle-thing + http-deceiver) is broken on
// current Node versions (node-spdy issue #369), and the Connection API also
// lets us see RST_STREAM and pushed streams exactly.
const agent = spdy.createAgent({
  host: host,
  port: port,
  rejectUnauthorized: false,
  servername: secure && !/^[0-9.]+$/.test(host) ? host : undefined,
  spdy: spdyOptions
})

let connection = null
let sessionError = null
const authority = parsed[0].host // host[:port] as in the URL

agent.on('error', function (err) {
  log('agent error:', err.message)
  failSession(err)
})

function failSession (err) {
  if (sessionError) return
  sessionError = err
  for (const r of Array.from(active)) r.fail('session error: ' + err.message)
  next()
}

function negotiated () {
  if (connection) {
    const v = connection.getVersion()
    if (v === 3.1 || v === 3 || v === 2) return 'spdy/' + v
  }
  const st = agent._spdyState
  if (st && st.socket && st.socket.alpnProtocol) return st.socket.alpnProtocol
  return opts.protocol
}

let failures = 0
const seenErrors = new Set()
const active = new Set()
let pendingPushes = 0
let queue = parsed.slice()
let finished = false

function emit (obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

function pushUrl (p) {
  if (/^[a-z]+:\/\//i.test(p)) return p // SPDY/2 style absolute url
  return origin + (p.startsWith('/') ? p : '/' + p)
}

function trackPush (push, parentId) {
  pendingPushes++
  const url = pushUrl(push.path || '')
  const hash = crypto.createHash('sha256')
  let bytes = 0
  let status = null
  let done = false
  log('push promise', url, 'stream', push.id, 'associated', parentId, JSON.stringify(push.headers))
  function finish (obj, failed) {
    if (done) return
    done = true
    if (failed) failures++
    pendingPushes--
    emit(obj)
    maybeDone()
  }
  push.on('response', function (code) { status = code })
  push.on('data', function (chunk) {
    bytes += chunk.length
    hash.update(chunk)
  })
  push.on('end', function () {
    finish({
      url: url,
      status: status,
      protocol: negotiated(),
      bytes: bytes,
      sha256: hash.digest('hex'),
      pushed: true,
      associated: parentId
    }, false)
  })
  push.on('error', function (err) {
    finish({ url: url, error: 'pushed stream error: ' + err.message, pushed: true }, true)
  })
  push.on('close', function (err) {
    if (err) finish({ url: url, error: 'pushed stream reset: ' + (err.message || err), pushed: true }, true)
  })
}

function startOne (u) {
  const url = u.href
  const hash = crypto.createHash('sha256')
  let bytes = 0
  let status = null
  let done = false
  const started = Date.now()

  const record = {
    fail: function (msg) {
      if (done) return
      done = true
      active.delete(record)
      seenErrors.add(url)
      if (opts.expectError.indexOf(url) === -1) failures++
      emit({ url: url, error: msg })
      next()
    }
  }
  active.add(record)

  function succeed () {
    if (done) return
    done = true
    active.delete(record)
    emit({
      url: url,
      status: status,
      protocol: negotiated(),
      bytes: bytes,
      sha256: hash.digest('hex'),
      pushed: false,
      elapsed_ms: Date.now() - started
    })
    if (completed >= 0) completed++
    next()
  }

  const headers = { accept: '*/*', 'user-agent': 'node-spdy interop client' }
  if (postBody !== null) headers['content-length'] = String(postBody.length)

  const stream = connection.request({
    method: postBody === null ? 'GET' : 'POST',
    path: u.pathname + u.search,
    host: authority,
    headers: headers
  }, function (err) {
    if (err) record.fail('request error: ' + err.message)
  })
  log('stream', stream.id, stream.method, url)

  stream.on('pushPromise', function (push) { trackPush(push, stream.id) })
  stream.on('response', function (code, hdrs) {
    status = code
    log('response', stream.id, code, JSON.stringify(hdrs))
  })
  stream.on('data', function (chunk) {
    bytes += chunk.length
    hash.update(chunk)
  })
  stream.on('end', function () {
    if (status === null) return record.fail('stream ended without a response')
    succeed()
  })
  stream.on('error', function (err) { record.fail('stream error: ' + err.message) })
  // A RST_STREAM with CANCEL makes spdy-transport abort the stream without an
  // 'error' event: it only emits 'close' with an Error ("Aborted, code: CANCEL").
  stream.on('close', function (err) {
    if (err) record.fail('stream reset: ' + (err.message || err))
    else if (!done) setImmediate(function () { if (!done) record.fail('stream closed before its end') })
  })

  if (postBody !== null) stream.end(postBody)
}

let completed = 0
let pausing = false

function next () {
  if (connection === null && !sessionError) return
  if (pausing) return
  if (completed === opts.pauseAfter && opts.pause > 0 && queue.length > 0) {
    if (active.size > 0) return
    pausing = true
    completed = -1 // pause once
    log('pausing', opts.pause, 's')
    setTimeout(function () { pausing = false; next() }, opts.pause * 1000)
    return
  }
  while (queue.length > 0 && active.size < opts.concurrency) {
    if (opts.pauseAfter >= 0 && completed >= 0 && completed + active.size >= opts.pauseAfter) break
    if (sessionError) {
      const u = queue.shift()
      failures++
      emit({ url: u.href, error: 'session error: ' + sessionError.message })
      continue
    }
    startOne(queue.shift())
  }
  maybeDone()
}

function maybeDone () {
  if (finished) return
  if (queue.length > 0 || active.size > 0 || pendingPushes > 0) return
  finished = true
  for (const u of opts.expectError) {
    if (!seenErrors.has(u)) {
      process.stderr.write('client.js: expected an error for ' + u + ' but it succeeded\n')
      failures++
    }
  }
  clearTimeout(timer)
  // Close the session politely (GOAWAY), but do not wait long for it.
  let exited = false
  function exit () {
    if (exited) return
    exited = true
    process.exit(failures === 0 ? 0 : 1)
  }
  if (connection) {
    try {
      connection.end(exit)
    } catch (e) {
      exit()
    }
  }
  setTimeout(exit, 300)
}

const timer = setTimeout(function () {
  for (const r of Array.from(active)) r.fail('timeout after ' + opts.timeout + ' s')
  for (const u of queue) emit({ url: u.href, error: 'timeout: never sent' })
  failures += queue.length
  queue = []
  if (pendingPushes > 0) {
    process.stderr.write('client.js: ' + pendingPushes + ' pushed stream(s) unfinished at timeout\n')
    failures++
    pendingPushes = 0
  }
  maybeDone()
}, opts.timeout * 1000)

agent.once('_connect', function () {
  connection = agent._spdyState.connection
  log('session up, version', connection.getVersion())
  connection.on('error', function (err) {
    log('connection error:', err.message)
    failSession(err)
  })
  connection.on('close', function (err) {
    if (!finished) failSession(err || new Error('connection closed'))
  })
  next()
})

// http/1.1 negotiated (or the server closed): node-spdy's agent falls back
// silently; we treat it as a failure since this client tests SPDY.
const st = agent._spdyState
if (st && st.socket) {
  st.socket.once('close', function () {
    if (connection === null) failSession(new Error('connection closed before a SPDY session started (negotiated: ' +
      (st.socket.alpnProtocol || 'none') + ')'))
  })
}
