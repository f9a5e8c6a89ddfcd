//! Who is in the world: a scenario's kinds of node ([`NodeRole`], declared
//! with [`crate::node_roles!`]) and its nodes by role, with their names and
//! addresses ([`Topology`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The port every node listens on.
pub const NODE_PORT: u16 = 7000;

/// A scenario's kinds of node as a closed set: each scenario names its roles
/// in an enum, so that a node's program matches on its role instead of
/// comparing text. The name is what node names, saved files and traces
/// carry (`server-0`), so they read as before.
pub trait NodeRole: Copy + Eq + fmt::Debug + 'static {
    /// Every role, in the order the scenario's topology lists them.
    const ALL: &'static [Self];
    /// The role's name: its nodes are `NAME-0`, `NAME-1`, ...
    fn name(self) -> &'static str;
}

/// Declares a scenario's roles: an enum whose variants each carry the name
/// their nodes are called by, with its [`NodeRole`] implementation.
///
/// ```
/// overcast_sim::node_roles! {
///     /// The nodes of a toy scenario.
///     pub enum ToyRole {
///         /// The one server.
///         Server = "server",
///         /// The clients.
///         Client = "client",
///     }
/// }
/// use overcast_sim::topology::NodeRole;
/// assert_eq!(ToyRole::Client.name(), "client");
/// assert_eq!(ToyRole::ALL, &[ToyRole::Server, ToyRole::Client]);
/// ```
#[macro_export]
macro_rules! node_roles {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $crate::topology::NodeRole for $name {
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }
    };
}

/// What names a role where a role is asked for: a scenario's [`NodeRole`],
/// or, in generic code that reads roles off a [`Topology`], the name itself.
pub trait RoleName {
    /// The role's name.
    fn role_name(&self) -> &str;
}

impl<R: NodeRole> RoleName for R {
    fn role_name(&self) -> &str {
        self.name()
    }
}

impl RoleName for &str {
    fn role_name(&self) -> &str {
        self
    }
}

impl RoleName for String {
    fn role_name(&self) -> &str {
        self
    }
}

impl RoleName for &String {
    fn role_name(&self) -> &str {
        self
    }
}

/// One kind of node in the world, e.g. `server`, `client`, or a role a
/// scenario defines (a processor host, a connector, a lease holder).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    /// The role's name; its nodes are `NAME-0`, `NAME-1`, ...
    pub name: String,
    /// How many nodes have it.
    pub count: usize,
    /// Whether each node has a disk that outlives its crashes.
    pub disk: bool,
    /// Whether the fault plan may crash and pause its nodes.
    pub crashable: bool,
    /// Whether the world waits for its nodes' programs to finish (a workload)
    /// or runs them until the end (a service).
    pub awaited: bool,
    /// How many disks each node has, when it has any: the copies of a
    /// mirrored log (1: a single disk). Left out of saved topologies when 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub disks: usize,
}

/// For serde: a role saved before mirrored disks has one disk per node.
fn one() -> usize {
    1
}

/// For serde: leave the usual single disk out of the saved text.
fn is_one(n: &usize) -> bool {
    *n == 1
}

impl Role {
    /// A role with `count` nodes: no disk, not crashable, not awaited.
    pub fn new(role: impl RoleName, count: usize) -> Role {
        Role {
            name: role.role_name().to_string(),
            count,
            disk: false,
            crashable: false,
            awaited: false,
            disks: 1,
        }
    }
    /// Its nodes have disks.
    pub fn with_disk(mut self) -> Role {
        self.disk = true;
        self
    }
    /// Its nodes have `n` disks each (at least one): the copies of a
    /// mirrored log.
    pub fn with_disks(mut self, n: usize) -> Role {
        self.disk = true;
        self.disks = n.max(1);
        self
    }
    /// Its nodes may crash and pause.
    pub fn crashable(mut self) -> Role {
        self.crashable = true;
        self
    }
    /// The world waits for its nodes' programs to finish.
    pub fn awaited(mut self) -> Role {
        self.awaited = true;
        self
    }
}

/// The nodes of the world, by role. Role `k`'s node `i` is named
/// `ROLE-i` and has the address `10.k.(i / 250).(1 + i % 250)`, port
/// [`NODE_PORT`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// The roles, in the order their nodes are created.
    pub roles: Vec<Role>,
}

impl Topology {
    /// A topology of these roles.
    pub fn new(roles: Vec<Role>) -> Topology {
        Topology { roles }
    }

    /// The name of node `i` of `role`.
    pub fn node_name(role: impl RoleName, i: usize) -> String {
        format!("{}-{i}", role.role_name())
    }

    fn role_index(&self, role: &str) -> Option<usize> {
        self.roles.iter().position(|r| r.name == role)
    }

    /// The role called `name`.
    pub fn role(&self, name: impl RoleName) -> Option<&Role> {
        self.roles.iter().find(|r| r.name == name.role_name())
    }

    /// The address of node `i` of `role`; `None` for an unknown role.
    pub fn addr(&self, role: impl RoleName, i: usize) -> Option<SocketAddr> {
        let k = self.role_index(role.role_name())?;
        Some(Topology::addr_at(k, i))
    }

    /// The address of node `i` of the role at index `k`.
    fn addr_at(k: usize, i: usize) -> SocketAddr {
        SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(
                10,
                k as u8,
                (i / 250) as u8,
                1 + (i % 250) as u8,
            )),
            NODE_PORT,
        )
    }

    /// The name of the node at `addr`, if it is one of the topology's: any
    /// port of a node's IP is that node's (an SDK client's endpoint binds an
    /// ephemeral port, and its datagrams come from there).
    pub fn node_at(&self, addr: SocketAddr) -> Option<String> {
        // Read off the address (this runs per datagram): `10.k.(i / 250).(1 + i % 250)`.
        let IpAddr::V4(ip) = addr.ip() else {
            return None;
        };
        let [ten, k, hi, lo] = ip.octets();
        if ten != 10 || lo == 0 || lo > 250 {
            return None;
        }
        let role = self.roles.get(usize::from(k))?;
        let i = usize::from(hi) * 250 + usize::from(lo) - 1;
        (i < role.count && Topology::addr_at(usize::from(k), i).ip() == addr.ip())
            .then(|| Topology::node_name(&role.name, i))
    }

    /// The addresses of every node of `role`, by index (empty for an unknown role).
    pub fn addrs(&self, role: impl RoleName) -> Vec<SocketAddr> {
        let Some(k) = self.role_index(role.role_name()) else {
            return Vec::new();
        };
        (0..self.roles[k].count)
            .map(|i| Topology::addr_at(k, i))
            .collect()
    }

    /// Every node name, in creation order.
    pub fn node_names(&self) -> Vec<String> {
        self.names(|_| true)
    }

    /// The names of the nodes the fault plan may crash and pause.
    pub fn crashable_names(&self) -> Vec<String> {
        self.names(|r| r.crashable)
    }

    /// The names of the other nodes.
    pub fn steady_names(&self) -> Vec<String> {
        self.names(|r| !r.crashable)
    }

    /// The names of the disks, node by node (a budget's corrupt disks are
    /// counted among them): a node's first disk has the node's name, its
    /// further ones (the copies of a mirrored log) [`Topology::disk_name`]s.
    pub fn disk_names(&self) -> Vec<String> {
        self.roles
            .iter()
            .filter(|r| r.disk)
            .flat_map(|r| {
                (0..r.count).flat_map(move |i| {
                    let node = Self::node_name(&r.name, i);
                    (0..r.disks).map(move |copy| Self::disk_name(&node, copy))
                })
            })
            .collect()
    }

    /// The name of disk `copy` (from 0) of node `node`: the node's own name
    /// for the first, `NODE.b`, `NODE.c`... for the others.
    pub fn disk_name(node: &str, copy: usize) -> String {
        if copy == 0 {
            node.to_string()
        } else {
            format!("{node}.{}", char::from(b'a' + (copy % 26) as u8))
        }
    }

    fn names(&self, keep: impl Fn(&Role) -> bool) -> Vec<String> {
        self.roles
            .iter()
            .filter(|r| keep(r))
            .flat_map(|r| (0..r.count).map(move |i| Self::node_name(&r.name, i)))
            .collect()
    }
}
