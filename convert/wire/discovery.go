package wire

// DiscoveryPath is where clients find the services a host offers.
const DiscoveryPath = "/.well-known/terraform.json"

// Discovery is the service discovery document: service IDs
// ("providers.v1", "modules.v1") to base URLs.
type Discovery map[string]any
