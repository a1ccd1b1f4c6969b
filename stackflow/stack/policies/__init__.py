"""Pure rules of the policy kinds (StackConfigPolicy, ElasticsearchAutoscaler, AutoOpsAgentPolicy)."""
