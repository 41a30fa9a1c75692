//! The names of what generated cases reach (`coverage.rs` counts them):
//! every key in the order the table lists them, and the hooks counted by
//! name.

/// Every behaviour counted, in the order the table lists them.
pub const KEYS: &[&str] = &[
    "phase.prepare_run",
    "phase.resolve_model_context",
    "phase.prepare_model_step",
    "phase.around_model_call",
    "phase.transform_step_stream",
    "phase.before_tool_call",
    "phase.after_tool_result",
    "phase.after_step",
    "decision.respond",
    "decision.run_patch",
    "decision.step_patch",
    "decision.replace_input",
    "decision.reject",
    "decision.replace_output",
    "decision.after_step.next_step",
    "decision.after_step.complete",
    "decision.next_with_patch",
    "transition.next_step",
    "transition.steer",
    "transition.wait",
    "transition.aborted",
    "transition.refused",
    "transition.complete",
    "transition.max_steps",
    "tool.output",
    "tool.fail",
    "tool.throw",
    "tool.rejected",
    "tool.invalid_input",
    "tool.unknown_tool",
    "tool.cancelled",
    "tool.denied",
    "tool.client",
    "tool.kind.backend",
    "tool.kind.approval",
    "tool.kind.approval_when",
    "tool.approval_when.waited",
    "tool.approval_when.ran_unasked",
    "tool.kind.client",
    "answer.approved",
    "answer.denied",
    "answer.submitted",
    "answer.refused",
    "run.resumed",
    "queue.behind_waiting",
    "cancel.waiting",
    "on_output.ran",
    "on_output.wrote",
    "stream.abort",
    "stream.provider_error",
    "attempt.failed",
    "attempt.fallback",
    "queue.overlap",
    "steer.stored",
    "steer.new_run",
    "cancel.queued",
    "cancel.active",
    "run.completed",
    "run.failed",
    "run.cancelled",
    "run.hook_error",
    "hook.set_metadata",
    "hook.patch_metadata",
    "hook.metadata_overlay",
    "hook.context_message",
    "metadata.written",
    "metadata.staged",
    "metadata.with_results",
    "context_message.stored",
    "hook.hide_message",
    "visibility.mid_run",
    // Where features cross (issue 25; see `crossings`).
    "cross.steer_while_waiting",
    "cross.cancel_while_cut_off",
    "cross.delete_among_workers",
    "cross.answer_before_wait",
    "cross.expect_across_incarnation",
    "cross.queued_cancel_behind_waiting",
    "cross.compaction_behind_queue",
    "cross.watch_among_workers",
    "cross.give_up_window",
    "cross.hook_on_resume",
    "cross.bound_handle_after_delete",
    "cross.answer_by_call_id",
    "cross.answer_after_cancel",
    "cross.hook_expectation",
    "cross.slow_summary",
    "cross.regenerate_resumed_steer",
    // What hooks and summaries write, and whether it persists (issue 38,
    // `fuzz/persist.rs`): a hook's staged write cut off from its result
    // (K5), a summary the redactor masks (C3), and one whose run was
    // taken over.
    "cross.hook_write_cut_off",
    "cross.summary_redacted",
    "cross.summary_redacted_cut_off",
    // Cases also run on the other store and compared (memory and SQLite,
    // `--differential`).
    "diff.sqlite",
    "cross.fault_at_request",
    "cross.renew_before_tools",
    // Where a taker must settle the last committed step (issue 38, K3;
    // see `taker`).
    "cross.fault_at_final_commit",
    "cross.fault_after_step_decision",
    "cross.renew_before_answered_tool",
    // Issue 38 (`fuzz/near.rs`): among workers, a cancel that reached the
    // store while one of its run's tools ran, and a fault around a
    // compaction's read or write on a thread deleted from that read on.
    "cross.cancel_while_a_tool_runs_among_workers",
    "cross.fault_near_a_deleted_compaction",
    // Among workers (`Coverage::cluster`): cases with workers, faults
    // carried out, runs taken over by another worker.
    "workers.case",
    "workers.three_or_more",
    "fault.crash",
    "fault.restart",
    "fault.partition",
    "fault.heal",
    "fault.hold",
    "fault.release",
    "fault.pause",
    "fault.resume",
    "lease.takeover",
    // Replayed provider streams (`fuzz/replayed.rs`, issue 29): cases whose
    // model replays built-in recordings, and where those met waiting,
    // workers, a stream transform and a cancel.
    "replay.case",
    "cross.replay_and_wait",
    "cross.replay_among_workers",
    "cross.replay_through_a_transform",
    "cross.replay_and_cancel",
    // Provider streams as providers send them (issue 40, S6): a case that
    // drew a cut recording, a cut that reached its run as the stream's
    // error, a refused or filtered step, and a stream a `fallback` read
    // whole and answered on another model.
    "replay.cut",
    "replay.cut_reached_the_run",
    "replay.refused",
    "cross.replay_stream_answered",
    // The fault-free twin (issue 38): cases with runtime faults judged
    // against their twin, and those not judged, by why; entries placed
    // after a moment of a run rather than at a time.
    "twin.judged",
    "twin.not_judged.no_fault",
    "twin.not_judged.races",
    "twin.not_judged.cut_short",
    "twin.not_judged.twin_cut_short",
    "twin.not_judged.on_resume",
    "twin.not_judged.registered",
    "timeline.after",
];

/// The hooks counted by name whenever one decides (`<hook>#<index>`, the
/// name a generated hook gets).
pub(super) const NAMED_HOOKS: &[(&str, &str)] = &[
    ("set_metadata#", "hook.set_metadata"),
    ("patch_metadata#", "hook.patch_metadata"),
    ("metadata_overlay#", "hook.metadata_overlay"),
    ("context_message#", "hook.context_message"),
    ("hide_message#", "hook.hide_message"),
];
