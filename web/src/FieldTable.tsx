/** A two-column table of named values (a record's attributes, metadata, parameters), names as row headers. */
import type { ReactNode } from 'react';
import { Table, type TableProps } from '@mantine/core';

export function FieldTable({ rows, ...props }: { rows: [string, ReactNode][] } & TableProps) {
  return (
    <Table {...props}>
      <Table.Tbody>
        {rows.map(([name, value]) => (
          <Table.Tr key={name}>
            <Table.Th scope="row" w={200}>
              {name}
            </Table.Th>
            <Table.Td>{value}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
