//! The wire both store connections speak over turmoil's simulated TCP:
//! length-prefixed frames to and from the store host, shared by the
//! request/response protocol (`net`) and the watchers' change feed
//! (`feed`).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::TcpStream;

/// The store's host name.
pub const STORE_HOST: &str = "store";
/// The largest frame either side accepts.
const MAX_FRAME: usize = 16 << 20;

pub(super) async fn write_frame(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(bytes).await?;
    stream.flush().await
}

pub(super) async fn read_frame(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::other("frame too large"));
    }
    let mut buf = vec![0u8; len];
    stream.read_exact(&mut buf).await?;
    Ok(buf)
}
