"""ECK's ElasticsearchAutoscaler rules as pure functions, one idea a module.

``spec`` reads the policies, ``validation`` lists the spec's problems, ``recommenders`` and
``sizing`` turn an ``_autoscaling/capacity`` response into node-set resources and counts
(``results`` holds what they yield, ``quantities`` how amounts are rounded and rendered),
``node_sets`` writes them into the Elasticsearch spec, ``status`` reports conditions, policy
entries and events, and ``unlicensed`` is the case without an enterprise license.

Nothing here does I/O: the autoscaler's activities read the autoscaler, the cluster and the
capacity response, call these functions and write what they return.
"""
