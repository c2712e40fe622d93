//! Lingering close. A socket closed while the peer is still sending is
//! answered with a reset, and the peer's write fails before it reads the
//! last answer: a 413 or 408 while it is still sending the body, the
//! gateway's `PAYLOAD_TOO_LARGE` and close 1009 while it is still sending
//! the oversized frame. So a connection the daemon ends first is
//! half-closed, and what still arrives is read and dropped for a bounded
//! time before the socket closes (as HTTP servers do).

use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;

/// How long a closed connection is drained at most; the daemon's shutdown
/// waits for it (crates/server/src/daemon.rs allows 5 s for everything).
const LINGER_MAX: Duration = Duration::from_secs(2);

/// Closes `stream`: at once when the peer has closed its side already (the
/// common case, one non-blocking read), else after draining. `slot` (the
/// connection's place under the cap) is held until the socket is closed.
pub(super) fn close(stream: TcpStream, slot: OwnedSemaphorePermit) {
    let mut probe = [0u8; 512];
    match stream.try_read(&mut probe) {
        Ok(0) => return,
        Err(err) if err.kind() != io::ErrorKind::WouldBlock => return,
        Ok(_) | Err(_) => {}
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(drain(stream, slot));
}

async fn drain(mut stream: TcpStream, slot: OwnedSemaphorePermit) {
    // The peer sees the end of our data (after the answer) right away.
    let _ = stream.shutdown().await;
    let mut sink = vec![0u8; 16 * 1024];
    let discard = async {
        while let Ok(read) = stream.read(&mut sink).await
            && read > 0
        {}
    };
    let _ = tokio::time::timeout(LINGER_MAX, discard).await;
    drop(stream);
    drop(slot);
}
