//! Panics planted on purpose (hooks and tools built to panic), and a panic
//! hook that keeps them out of the output.

/// Marker in planted panic messages, so the binary's panic hook can keep them quiet.
pub const PLANTED_PANIC: &str = "[planted panic]";

/// Installs a panic hook that keeps planted panics (scenario hooks and tools
/// built to panic) out of the output; any other panic is reported as before.
pub fn quiet_planted_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !crate::observe::panic_text(info.payload()).starts_with(PLANTED_PANIC) {
            previous(info);
        }
    }));
}
