//! `$/progress` for one long command, reported from its worker thread.

use tokio::runtime::Handle;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::Client;

/// Reports `$/progress` for one long operation (nothing at all when the
/// client does not support it or refused the token).
pub struct Progress {
    client: Client,
    rt: Handle,
    token: Option<ProgressToken>,
}

impl Progress {
    pub fn begin(
        client: Client,
        rt: Handle,
        token: ProgressToken,
        supported: bool,
        title: &str,
    ) -> Progress {
        let created = supported
            && rt
                .block_on(client.create_work_done_progress(token.clone()))
                .is_ok();
        let progress = Progress {
            client,
            rt,
            token: created.then_some(token),
        };
        progress.send(WorkDoneProgress::Begin(WorkDoneProgressBegin {
            title: title.to_string(),
            cancellable: Some(false),
            message: None,
            percentage: None,
        }));
        progress
    }

    pub fn report(&self, message: &str) {
        self.send(WorkDoneProgress::Report(WorkDoneProgressReport {
            cancellable: Some(false),
            message: Some(message.to_string()),
            percentage: None,
        }));
    }

    pub fn end(&self, message: &str) {
        self.send(WorkDoneProgress::End(WorkDoneProgressEnd {
            message: Some(message.to_string()),
        }));
    }

    fn send(&self, value: WorkDoneProgress) {
        let Some(token) = &self.token else { return };
        let params = ProgressParams {
            token: token.clone(),
            value: ProgressParamsValue::WorkDone(value),
        };
        self.rt.block_on(
            self.client
                .send_notification::<notification::Progress>(params),
        );
    }
}
