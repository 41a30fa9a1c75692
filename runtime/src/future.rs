//! The future type hooks, tools and models return, and panic containment.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future returned by a hook, tool or model.
///
/// Synchronous answers are built with [`HookFuture::ready`] and cost no
/// allocation; asynchronous ones box their future once with [`HookFuture::new`].
#[must_use = "a hook future does nothing unless awaited"]
pub struct HookFuture<'a, T>(Inner<'a, T>);

enum Inner<'a, T> {
    Ready(Option<T>),
    Boxed(Pin<Box<dyn Future<Output = T> + Send + 'a>>),
}

impl<'a, T> HookFuture<'a, T> {
    /// An answer that is already known.
    pub fn ready(value: T) -> Self {
        HookFuture(Inner::Ready(Some(value)))
    }

    /// An answer that needs to wait for something.
    pub fn new(fut: impl Future<Output = T> + Send + 'a) -> Self {
        HookFuture(Inner::Boxed(Box::pin(fut)))
    }
}

impl<T> std::fmt::Debug for HookFuture<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Inner::Ready(_) => f.write_str("HookFuture::Ready"),
            Inner::Boxed(_) => f.write_str("HookFuture::Boxed"),
        }
    }
}

// The ready value is only ever moved out, never pinned, so the wrapper is Unpin
// whatever `T` is.
impl<T> Unpin for HookFuture<'_, T> {}

impl<T> Future for HookFuture<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut self.get_mut().0 {
            Inner::Ready(v) => Poll::Ready(v.take().expect("HookFuture polled after completion")),
            Inner::Boxed(f) => f.as_mut().poll(cx),
        }
    }
}

/// Text of a caught panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_string()
    }
}

/// Calls `make` when first polled and drives the future it returns,
/// turning a panic in either into `Err(message)` (SPEC X2).
pub(crate) fn guarded<'a, F, T>(make: F) -> Guarded<'a, F, T>
where
    F: FnOnce() -> HookFuture<'a, T>,
{
    Guarded {
        make: Some(make),
        pending: None,
    }
}

/// The future of [`guarded`]: a plain state, not an `async fn`, so that a
/// ready answer is handed on at once, with no state machine around it and
/// no guard (taking it cannot panic); only a boxed future is kept.
pub(crate) struct Guarded<'a, F, T> {
    make: Option<F>,
    pending: Option<Pin<Box<dyn Future<Output = T> + Send + 'a>>>,
}

// `make` is only ever moved out, never pinned: the wrapper is Unpin
// whatever `F` is, as `HookFuture` is.
impl<F, T> Unpin for Guarded<'_, F, T> {}

impl<'a, F, T> Future for Guarded<'a, F, T>
where
    F: FnOnce() -> HookFuture<'a, T>,
{
    type Output = Result<T, String>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(make) = this.make.take() {
            match catch_unwind(AssertUnwindSafe(make)) {
                Ok(HookFuture(Inner::Ready(v))) => {
                    return Poll::Ready(Ok(v.expect("a fresh HookFuture holds its answer")));
                }
                Ok(HookFuture(Inner::Boxed(f))) => this.pending = Some(f),
                Err(p) => return Poll::Ready(Err(panic_message(&*p))),
            }
        }
        let f = this
            .pending
            .as_mut()
            .expect("Guarded polled after completion");
        match catch_unwind(AssertUnwindSafe(|| f.as_mut().poll(cx))) {
            Ok(p) => p.map(Ok),
            Err(p) => Poll::Ready(Err(panic_message(&*p))),
        }
    }
}

/// Drives `fut`, turning a panic while it is polled into `Err(message)`.
pub(crate) async fn catch_panic<F: Future>(fut: F) -> Result<F::Output, String> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(
        move |cx| match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(p) => Poll::Ready(Err(panic_message(&*p))),
        },
    )
    .await
}

/// Drives `main` with `side` beside it, `main` always polled first;
/// ends when `main` does, whatever `side` is doing.
pub(crate) async fn alongside<F: Future>(main: F, side: impl Future<Output = ()>) -> F::Output {
    let mut main = std::pin::pin!(main);
    let mut side = std::pin::pin!(side);
    let mut side_done = false;
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(v) = main.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        if !side_done {
            side_done = side.as_mut().poll(cx).is_ready();
        }
        Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ready_and_boxed_both_complete() {
        assert_eq!(HookFuture::ready(3).await, 3);
        assert_eq!(HookFuture::new(async { 4 }).await, 4);
    }

    #[tokio::test]
    async fn panics_become_errors() {
        let r: Result<u8, String> = guarded(|| panic!("boom at build")).await;
        assert_eq!(r, Err("boom at build".to_string()));
        let r: Result<u8, String> =
            guarded(|| HookFuture::new(async { panic!("boom at poll") })).await;
        assert_eq!(r, Err("boom at poll".to_string()));
    }
}
