//! A kubelet-like endpoint for Kubernetes' exec and port-forward streams, on speedy's
//! SPDY/3.1 multiplexer (`speedy_net::spdy::mux`) behind an HTTP/1.1 Upgrade. It runs a
//! fixed echo behaviour, never a command: see `speedy_net::spdy::kube_double`.
//!
//!     cargo run -p speedy-net --features kube-double --example kubelet_double
//!     speedy kube exec --stdin - 'http://127.0.0.1:PORT/exec?stdin=true&stdout=true&stderr=true&exit=3'

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on {}", listener.local_addr()?);
    speedy_net::spdy::kube_double::serve(listener).await
}
