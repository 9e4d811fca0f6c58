// Package fleet is what the operator knows of the clusters the platform
// registered (FleetClusters, Cluster API Clusters) and how a placed
// AddonsLayer's version rolls out across them: which clusters a placement
// chooses, the waves they fall in, which of them take the version now, and
// the connections to them, one per kubeconfig content.
package fleet
