//! The one integration test binary of `pai-providers`: the recordings
//! decoded to their expected parts, every chunking of them giving the same
//! parts, and the bad-stream table.

mod bad_streams;
mod chunking;
mod common;
mod props;
mod recordings;
