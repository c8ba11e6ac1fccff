//! A TLS-only door in front of the local PostgreSQL, as RDS Proxy is when it
//! requires TLS: a connection whose first message is not the SSLRequest (a
//! plain startup, a plain cancel request) is closed unanswered; any other is
//! relayed as it is, TLS handshake and all.
//!
//! PostgreSQL itself takes a plain cancel request whatever `pg_hba.conf`
//! says (a cancel request names no role or database), so only such a door
//! shows that cancel requests travel over TLS.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The SSLRequest message: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

pub struct TlsOnlyDoor {
    pub addr: SocketAddr,
    refused: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Drop for TlsOnlyDoor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsOnlyDoor {
    /// A door on a loopback port in front of `upstream` (`host:port`).
    pub async fn start(upstream: String) -> TlsOnlyDoor {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let refused = Arc::new(AtomicU64::new(0));
        let counter = refused.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(admit(client, upstream.clone(), counter.clone()));
            }
        });
        TlsOnlyDoor {
            addr,
            refused,
            task,
        }
    }

    /// Connections closed because they did not start with TLS.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }
}

/// Relays a connection that asks for TLS first; closes any other.
async fn admit(mut client: TcpStream, upstream: String, refused: Arc<AtomicU64>) {
    let mut first = [0u8; 8];
    if client.read_exact(&mut first).await.is_err() || first != SSL_REQUEST {
        refused.fetch_add(1, Ordering::SeqCst);
        return;
    }
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        return;
    };
    if server.write_all(&first).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}
