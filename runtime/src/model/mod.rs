//! The model seam beyond the root's [`LanguageModel`],
//! [`ModelRequest`], [`StreamPart`]
//! and [`ModelError`]: the stream a call returns
//! ([`PartStream`], [`BoxStream`], [`ReadyStream`], [`PartSink`]), how it
//! ends ([`FinishReason`], [`StreamedCall`], a provider's [`Refusal`]), providers of named models
//! ([`ModelProvider`], [`ModelMap`]), and the route and sparse patches a
//! step's model call is made with (SPEC P1–P5: [`Route`], [`Patch`],
//! [`RoutePatch`], [`ModelSettings`], [`ProviderOptions`], [`ToolChoice`]).

pub(crate) mod seam;

pub use crate::patch::{ModelSettings, Patch, ProviderOptions, Route, RoutePatch, ToolChoice};
pub use seam::{
    BoxStream, FinishReason, ModelMap, ModelProvider, PartSink, PartStream, ReadyStream, Refusal,
    RefusalKind, StreamedCall,
};

pub(crate) use seam::{LanguageModel, ModelError, ModelRequest, StreamPart, offered};
