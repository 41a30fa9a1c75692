//! The response body as a [`PartStream`]: each chunk the connection
//! delivers is fed to the format's [`Decoder`] as it arrives, and the parts
//! it completes are handed out in order. The connection failing, the body
//! stalling past the idle timeout, or a body that does not decode ends the
//! stream with an error part (the stream exists: P7). Dropping the stream
//! drops the response, which closes the connection: that is cancellation.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pai_runtime::{StreamPart, model::PartStream};
use reqwest::Response;
use tokio::time::{Instant, Sleep};

use super::ReportHook;
use super::error::{HttpError, chain};
use crate::decoder::Decoder;

type Chunk = (Response, reqwest::Result<Option<bytes::Bytes>>);

/// One attempt's streaming body.
pub(crate) struct HttpStream {
    /// The read of the next chunk; `None` once the body ended or failed.
    read: Option<Pin<Box<dyn Future<Output = Chunk> + Send>>>,
    decoder: Option<Decoder>,
    ready: VecDeque<StreamPart>,
    idle: Duration,
    stall: Pin<Box<Sleep>>,
    on_report: Option<ReportHook>,
}

impl HttpStream {
    pub(crate) fn new(
        response: Response,
        decoder: Decoder,
        idle: Duration,
        on_report: Option<ReportHook>,
    ) -> HttpStream {
        HttpStream {
            read: Some(read(response)),
            decoder: Some(decoder),
            ready: VecDeque::new(),
            idle,
            stall: Box::pin(tokio::time::sleep(idle)),
            on_report,
        }
    }

    /// A chunk, the end of the body, or the connection's failure.
    fn take(&mut self, response: Response, chunk: reqwest::Result<Option<bytes::Bytes>>) {
        match chunk {
            Ok(Some(bytes)) => {
                let decoder = self
                    .decoder
                    .as_mut()
                    .expect("a body being read has a decoder");
                let mut parts = Vec::new();
                let fed = decoder.feed(&bytes, &mut parts);
                self.ready.extend(parts);
                match fed {
                    Ok(()) => {
                        self.read = Some(read(response));
                        let deadline = Instant::now() + self.idle;
                        self.stall.as_mut().reset(deadline);
                    }
                    Err(e) => self.fail(HttpError::Decode(e)),
                }
            }
            Ok(None) => {
                let decoder = self
                    .decoder
                    .take()
                    .expect("a body being read has a decoder");
                match decoder.finish() {
                    Ok(report) => {
                        if let Some(hook) = &self.on_report {
                            hook(&report);
                        }
                    }
                    Err(e) => self.fail(HttpError::Decode(e)),
                }
            }
            Err(e) => {
                // Where the connection broke: an answer already whole
                // stands (S6); else the cut is located.
                let decoder = self.decoder.take();
                match decoder.map(Decoder::finish) {
                    Some(Ok(report)) => {
                        if let Some(hook) = &self.on_report {
                            hook(&report);
                        }
                    }
                    Some(Err(cut)) => self.fail(HttpError::Body(format!("{}; {cut}", chain(&e)))),
                    None => self.fail(HttpError::Body(chain(&e))),
                }
            }
        }
    }

    /// Ends the stream with `error` as its last part.
    fn fail(&mut self, error: HttpError) {
        self.read = None;
        self.decoder = None;
        self.ready.push_back(StreamPart::error(error.to_string()));
    }
}

fn read(mut response: Response) -> Pin<Box<dyn Future<Output = Chunk> + Send>> {
    Box::pin(async move {
        let chunk = response.chunk().await;
        (response, chunk)
    })
}

impl PartStream for HttpStream {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<StreamPart>> {
        loop {
            if let Some(part) = self.ready.pop_front() {
                return Poll::Ready(Some(part));
            }
            let Some(read) = self.read.as_mut() else {
                return Poll::Ready(None);
            };
            match read.as_mut().poll(cx) {
                Poll::Ready((response, chunk)) => {
                    self.read = None;
                    self.take(response, chunk);
                }
                Poll::Pending => {
                    if self.stall.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.fail(HttpError::Idle(self.idle.as_millis() as u64));
                }
            }
        }
    }
}
