//! Connecting a node's store SDK client: its settings from the deployment,
//! and its random stream, named by the scenario so its draws stay put.

use overcast_model::bugs::ModelBugs;
use overcast_model::client::{ClientConfig, StoreClient};
use overcast_model::env::{ListenTable, SendPolicy};
use overcast_model::retry::RetryOptions;
use overcast_sim::rng::stream;
use overcast_sim::world::{NodeEnv, RoleName};

/// How a node's SDK client reaches its servers.
pub struct SdkSetup<'a> {
    /// The servers' role: the client talks to every node of it.
    pub servers: &'a dyn RoleName,
    /// Number of partitions the key space is split into.
    pub partitions: u32,
    /// Retry budgets and the request timeout.
    pub retry: &'a RetryOptions,
    /// The seeded bugs the SDK reads.
    pub bugs: ModelBugs,
    /// What the network does to the client's requests.
    pub send: SendPolicy,
    /// Which servers listen: a connect to one that does not is refused and the
    /// attempt never sent (the default: every connect succeeds).
    pub connect: ListenTable,
}

impl SdkSetup<'_> {
    /// The SDK's settings for this node.
    pub fn config(&self, env: &NodeEnv) -> ClientConfig {
        ClientConfig {
            servers: env.topology.addrs(self.servers.role_name()),
            partitions: self.partitions,
            retry: self.retry.clone(),
            bugs: self.bugs,
            send: self.send.clone(),
            connect: self.connect.clone(),
        }
    }

    /// Connects an SDK client whose draws come from the stream `stream_name`
    /// of the run's seed; `None` (logged) if it cannot bind.
    pub async fn connect(&self, env: &NodeEnv, stream_name: &str) -> Option<StoreClient> {
        let rng = stream(env.seed, stream_name);
        match StoreClient::connect(self.config(env), Box::new(rng)).await {
            Ok(client) => Some(client),
            Err(e) => {
                tracing::error!("{} could not bind its {stream_name} client: {e}", env.name);
                None
            }
        }
    }
}
