//! Whose workspace (files and skills) a client session uses, and opening it when it is needed.
//! Over stdio the process's one client uses the project's workspace; over HTTP each principal
//! uses its own (`workspace_sharing = "principal"`, the default), or every principal the
//! project's (`"project"`). The project's is opened when the server starts; a principal's when
//! its executions first use files or skills (look-ups never create one). Where a workspace is and
//! what it holds is `workspace`'s.

use std::path::PathBuf;
use std::sync::Arc;

use super::session::STDIO_SESSION;
use crate::config::settings::{Settings, WorkspaceQuota, WorkspaceSharing};
use crate::workspace::{Owner, Space};

/// Why a session has no workspace to use.
#[derive(Debug, Clone)]
pub(crate) enum Unavailable {
    /// Workspaces are off (`workspace = false`).
    Off,
    /// It could not be opened (the log says why).
    Failed,
}

impl Unavailable {
    /// What a workspace call answers.
    pub(crate) fn for_files(&self) -> String {
        match self {
            Unavailable::Off => "the workspace is off (setting workspace = false)".into(),
            Unavailable::Failed => "the workspace could not be opened (see the server's log); check that workspace_dir is a writable directory".into(),
        }
    }

    /// What a skill call answers.
    pub(crate) fn for_skills(&self) -> String {
        match self {
            Unavailable::Off => {
                "skills need the workspace, which is off (setting workspace = false)".into()
            }
            Unavailable::Failed => "skills need the workspace, which could not be opened (see the server's log); check that workspace_dir is a writable directory".into(),
        }
    }
}

/// The workspaces of the served project.
pub(crate) struct Workspaces {
    /// `workspace_dir`, when workspaces are on.
    dir: Option<PathBuf>,
    project_dir: PathBuf,
    quota: WorkspaceQuota,
    sharing: WorkspaceSharing,
    /// The project's, opened when the server started (none when it could not be).
    project: Option<Arc<Space>>,
}

impl Workspaces {
    pub(crate) fn new(settings: &Settings, project: Option<Arc<Space>>) -> Self {
        Workspaces {
            dir: settings.workspace_dir.clone(),
            project_dir: settings.project_dir.clone(),
            quota: settings.workspace_quota,
            sharing: settings.workspace_sharing,
            project,
        }
    }

    /// Whose workspace `session` uses.
    pub(crate) fn owner(&self, session: &str) -> Owner {
        if session == STDIO_SESSION || self.sharing == WorkspaceSharing::Project {
            Owner::Project
        } else {
            Owner::Principal(session.to_string())
        }
    }

    /// The project's workspace, when it could be opened (the command line's `search`).
    pub(crate) fn project(&self) -> Option<&Arc<Space>> {
        self.project.as_ref()
    }

    /// `session`'s workspace, created when missing with `create` (else `None` when it has none
    /// yet). File work runs off the runtime's threads.
    pub(crate) async fn of(
        &self,
        session: &str,
        create: bool,
    ) -> Result<Option<Arc<Space>>, Unavailable> {
        let Some(dir) = self.dir.clone() else {
            return Err(Unavailable::Off);
        };
        let owner = self.owner(session);
        if owner == Owner::Project {
            return match &self.project {
                Some(space) => Ok(Some(space.clone())),
                // Logged when the server started.
                None => Err(Unavailable::Failed),
            };
        }
        let (project_dir, quota) = (self.project_dir.clone(), self.quota);
        let opened = tokio::task::spawn_blocking(move || {
            if create {
                Space::open_owned(&dir, &project_dir, &owner, quota).map(Some)
            } else {
                Space::find(&dir, &project_dir, &owner, quota)
            }
        })
        .await
        .map_err(|e| {
            tracing::warn!("opening a workspace failed: {e}");
            Unavailable::Failed
        })?;
        match opened {
            Ok(space) => Ok(space.map(Arc::new)),
            Err(e) => {
                tracing::warn!("{e}");
                Err(Unavailable::Failed)
            }
        }
    }

    /// `session`'s workspace for skills, created when missing, or the skill call's error.
    pub(crate) async fn for_skills(&self, session: &str) -> Result<Arc<Space>, String> {
        match self.of(session, true).await {
            Ok(Some(space)) => Ok(space),
            Ok(None) => Err(Unavailable::Failed.for_skills()),
            Err(unavailable) => Err(unavailable.for_skills()),
        }
    }

    /// `session`'s workspace if it has one (for look-ups, which never create one).
    pub(crate) async fn existing(&self, session: &str) -> Option<Arc<Space>> {
        self.of(session, false).await.ok().flatten()
    }
}
