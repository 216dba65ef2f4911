//! The resources and prompts of a downstream server: listed, read and fetched for sandboxed
//! code, each request bounded by the call timeout and with its `input_required` rounds
//! (`rounds`). Whether the code may is the broker's.

use std::sync::Arc;

use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, ReadResourceRequestParams, ReadResourceResponse,
};
use serde_json::{Map, Value};

use super::rounds::{self, Round, RoundsError};
use super::{UpstreamError, UpstreamPool};
use crate::ask::Asking;

impl UpstreamPool {
    /// Every resource the server lists (all pages).
    pub(crate) async fn list_resources(&self, server: &str) -> Result<Value, UpstreamError> {
        let peer = self.peer(server).await?;
        let listed = tokio::time::timeout(self.timeouts.call, peer.list_all_resources()).await;
        self.settle(server, "resources/list", listed.map(|r| r.map(to_value)))
    }

    /// Every prompt the server lists (all pages).
    pub(crate) async fn list_prompts(&self, server: &str) -> Result<Value, UpstreamError> {
        let peer = self.peer(server).await?;
        let listed = tokio::time::timeout(self.timeouts.call, peer.list_all_prompts()).await;
        self.settle(server, "prompts/list", listed.map(|r| r.map(to_value)))
    }

    /// The contents of the resource `uri` (`{contents: [...]}`).
    pub(crate) async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        asking: Option<&Arc<Asking>>,
    ) -> Result<Value, UpstreamError> {
        let peer = self.peer(server).await?;
        let rounds = rounds::rounds(server, asking, &self.roots, |responses, state| {
            let mut params = ReadResourceRequestParams::new(uri);
            params.input_responses = responses;
            params.request_state = state;
            let peer = peer.clone();
            async move {
                Ok(match peer.read_resource_once(params).await? {
                    ReadResourceResponse::Complete(result) => Round::Done(to_value(result)),
                    ReadResourceResponse::InputRequired(input) => Round::Input(input),
                    _ => Round::Other("it answered with a result of another kind"),
                })
            }
        });
        let read = tokio::time::timeout(self.timeouts.call, rounds).await;
        self.settle_rounds(server, "resources/read", read)
    }

    /// The prompt `name` with `args` (`{description, messages: [...]}`).
    pub(crate) async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        args: Map<String, Value>,
        asking: Option<&Arc<Asking>>,
    ) -> Result<Value, UpstreamError> {
        let peer = self.peer(server).await?;
        let rounds = rounds::rounds(server, asking, &self.roots, |responses, state| {
            let mut params = GetPromptRequestParams::new(name);
            params.arguments = Some(args.clone());
            params.input_responses = responses;
            params.request_state = state;
            let peer = peer.clone();
            async move {
                Ok(match peer.get_prompt_once(params).await? {
                    GetPromptResponse::Complete(result) => Round::Done(to_value(result)),
                    GetPromptResponse::InputRequired(input) => Round::Input(input),
                    _ => Round::Other("it answered with a result of another kind"),
                })
            }
        });
        let got = tokio::time::timeout(self.timeouts.call, rounds).await;
        self.settle_rounds(server, "prompts/get", got)
    }

    fn settle_rounds(
        &self,
        server: &str,
        method: &str,
        answer: Result<Result<Value, RoundsError>, tokio::time::error::Elapsed>,
    ) -> Result<Value, UpstreamError> {
        let answer = answer.map(|r| {
            r.map_err(|e| match e {
                RoundsError::Service(e) => e.to_string(),
                RoundsError::Relay(reason) => reason,
                RoundsError::TimedOut => "no answer within its bound".to_string(),
            })
        });
        match answer {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(reason)) => Err(failed(server, method, reason)),
            Err(_) => Err(self.timed_out(server, method)),
        }
    }

    fn settle(
        &self,
        server: &str,
        method: &str,
        answer: Result<Result<Value, rmcp::ServiceError>, tokio::time::error::Elapsed>,
    ) -> Result<Value, UpstreamError> {
        match answer {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(failed(server, method, e.to_string())),
            Err(_) => Err(self.timed_out(server, method)),
        }
    }

    fn timed_out(&self, server: &str, method: &str) -> UpstreamError {
        UpstreamError::Timeout {
            server: server.to_string(),
            tool: method.to_string(),
            ms: self.timeouts.call.as_millis(),
        }
    }
}

fn failed(server: &str, method: &str, reason: String) -> UpstreamError {
    UpstreamError::Call {
        server: server.to_string(),
        tool: method.to_string(),
        reason,
    }
}

fn to_value<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
