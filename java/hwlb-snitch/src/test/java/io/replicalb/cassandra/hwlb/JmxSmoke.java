package io.replicalb.cassandra.hwlb;

import javax.management.Attribute;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Reads (and optionally sets Enabled on) the plug-in's MBean of a running node, for the smoke
 * test (not part of the plug-in): {@code JmxSmoke PORT [true|false]}.
 */
public final class JmxSmoke
{
    private JmxSmoke()
    {
    }

    /** Prints every attribute of io.replicalb:type=HwlbSnitch at 127.0.0.1:PORT. */
    public static void main(String[] args) throws Exception
    {
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + args[0] + "/jmxrmi");
        try (JMXConnector c = JMXConnectorFactory.connect(url))
        {
            MBeanServerConnection s = c.getMBeanServerConnection();
            ObjectName name = new ObjectName(HwlbSnitch.MBEAN_NAME);
            if (args.length > 1)
                s.setAttribute(name, new Attribute("Enabled", Boolean.parseBoolean(args[1])));
            for (var a : s.getMBeanInfo(name).getAttributes())
                System.out.println(a.getName() + (a.isWritable() ? " (rw)" : "") + " = " + s.getAttribute(name, a.getName()));
        }
    }
}
