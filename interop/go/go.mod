module speedy-interop

go 1.26.8

require github.com/moby/spdystream v0.5.1
